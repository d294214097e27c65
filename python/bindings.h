// pybind11 is a thin driver: one bind_<area>.cpp per area, JSON text across the boundary
// (the Python side turns it into dicts and DataFrames).
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <string>

#include "models/scenario/config.h"

namespace ct::python {
void bind_scenario(pybind11::module_& m);
void bind_run(pybind11::module_& m);
void bind_calibrate(pybind11::module_& m);
void bind_export(pybind11::module_& m);
// Document JSON + overrides (JSON object of "a.b.c" -> value) -> loaded and checked Config.
// Parses, overrides and checks a scenario, naming every problem in one ScenarioError; with
// pre_run also every check `run` makes before simulating (what `validate` answers).
scenario::Config checked_config(const std::string& document_json, const std::string& overrides_json,
                                bool pre_run = false);
// The same for a document already parsed and overridden.
scenario::Config checked_config(const nlohmann::json& document, bool pre_run = false);
}  // namespace ct::python

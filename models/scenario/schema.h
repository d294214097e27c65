// Documents generated from the parameter table: JSON Schema (draft 2020-12) of scenario
// files, and a plain-text help table (key, kind, default, doc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ct::scenario {

nlohmann::json json_schema();
std::string help_text();

}  // namespace ct::scenario

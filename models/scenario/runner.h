// Runs a checked scenario and assembles the report (DESIGN.md "Report" keys).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/replay/step_model.h"
#include "models/scenario/config.h"

namespace ct::scenario {

struct RunOptions {
  std::string trace_path;  // Chrome trace of chosen ranks; empty = none
  int trace_ranks = 16;    // how many ranks the trace shows
};

// The report as a JSON object. Keys a model cannot yet compute are absent and listed
// under "not_computed" with the reason; no value is ever invented.
nlohmann::json run(const Config& config, const RunOptions& options = {});

// The step model's input for the scenario's training_job (what `run` simulates; also used to
// export the step program).
replay::StepInput step_input(const Config& config);

}  // namespace ct::scenario

// Runs a checked scenario and assembles the report (DESIGN.md "Report" keys).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "models/replay/step_model.h"
#include "models/scenario/config.h"
#include "models/workload/memory.h"

namespace ct::scenario {

// A table too large for JSON, as named columns (the Python binding hands each to numpy
// without copying).
using Column = std::variant<std::vector<int64_t>, std::vector<double>>;
using ColumnTable = std::vector<std::pair<std::string, Column>>;

struct RunOptions {
  std::string trace_path;  // Chrome trace of chosen ranks; empty = none
  // The GPUs the Chrome trace and the timeline show. Empty: training steps one rank per
  // pipeline stage and the whole first TP group (replay::traced_ranks), trace replays the
  // first trace_ranks ranks.
  std::vector<int> trace_gpus;
  int trace_ranks = 16;
  // When set, receives the column tables of the run: "fabric_links" (every fabric link
  // direction with its ends and load, network/link_table.h; training steps, traffic studies
  // and trace replays) and "timeline" (every timed instruction of the traced ranks,
  // replay::Timeline; training steps and trace replays).
  std::map<std::string, ColumnTable>* tables = nullptr;
};

// The report as a JSON object. Keys a model cannot yet compute are absent and listed
// under "not_computed" with the reason; no value is ever invented.
nlohmann::json run(const Config& config, const RunOptions& options = {});

// Every check `run` makes before it simulates anything beyond the table walk and check_config
// (the replay's memory estimate, the trace keys a trace kind uses); `validate` runs them too.
std::vector<std::string> pre_run_problems(const Config& config);

// "" when the machine this runs on can hold the replay of every rank (about 0.8 of its
// available memory), else what to do instead (one of pre_run_problems).
std::string step_memory_problem(const replay::StepInput& in);
// The same against `available_bytes` of this machine (available_memory_bytes(), read once by a
// batch of layouts: reading /proc/meminfo per layout cost a few percent of its evaluation).
std::string step_memory_problem(const replay::StepInput& in, double available_bytes);

// The report's "breakdown" object (step time split, seconds).
nlohmann::json breakdown_json(const replay::TimeBreakdown& b);

// The GPU memory the scenario's layouts are checked against (the catalog GPU's HBM, with the
// stack's default fragmentation and reserves).
workload::MemoryOptions memory_options(const Config& config);

// The step model's input for the scenario's training_job (what `run` simulates; also used to
// export the step program).
replay::StepInput step_input(const Config& config);

// Why the scenario's training step is not simulated in its network mode (packet mode beyond
// the slice it replays), or "" when it is.
std::string step_not_computed(const Config& config);

// The scenario's training step as the report's step figures come from it, typed (studies such
// as rollout that need only the figures). Throws ScenarioError when it is not computed
// (step_not_computed) or does not fit in memory.
replay::StepResult simulate_training_step(const Config& config);

// The scenario's link_degrade and slow_receiver faults for the network layer (training steps
// and traffic studies).
std::vector<network::LinkFaultSpec> link_fault_specs(const Config& config);
// The fault kinds link_fault_specs carries: link_degrade, slow_receiver, link_down, switch_down.
bool is_link_fault(const std::string& kind);

}  // namespace ct::scenario

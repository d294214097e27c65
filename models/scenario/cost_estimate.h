// What a run will cost before it starts: events, memory and wall time on this machine, from the
// scenario alone (nothing is built or simulated). `run` prints it when it exceeds a few seconds
// and refuses runs above a limit unless forced; `validate` prints it.
//
// Model (constants fitted on measured runs of this build on the project's 2-core reference
// machine, docs/estimates.md; other machines differ by their speed):
//   training step, analytical: events ~ the folded program's instructions (one replica per
//     stage), wall = setup(nodes) + events / rate;
//   training step, flow: events ~ k_flow x every rank's instructions, wall as above at the flow
//     executor's rate;
//   training step, packet: + about 8 events per packet of the step's fabric bytes (data-parallel
//     rings and pipeline activations);
//   traffic study: flows and their bytes are generated as the run would (cheap), events per
//     flow (flow) or about 8 per packet (packet);
//   trace replay: the trace files' bytes (inflated size estimated at 14x a gzip file) at the
//     importer's parse rate, plus its replay;
//   campaign: repeats x expected interruptions, negligible unless huge.
//   memory: the step program's estimate, the packet network's estimate, or 6 x the trace bytes
//     (tools/trace_import_rss.py), plus a fixed base.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/scenario/config.h"

namespace ct::scenario {

struct CostEstimate {
  double events = 0;        // simulation events (the report's sim.events)
  double memory_bytes = 0;  // peak resident memory of the process, about
  double wall_s = 0;        // on the reference machine
  std::string basis;        // what the estimate was computed from, for the message
};

// The estimate of one run of a checked config.
CostEstimate estimate_cost(const Config& config);

nlohmann::json to_json(const CostEstimate& e);

}  // namespace ct::scenario

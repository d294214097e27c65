// The kill-a-node drill (issue 19): what a node crash (or hang) costs a running job, as an event
// timeline. The job trains from time zero with the simulated step time and its checkpoint
// policy (save stall, asynchronous flush, interval: the storage and reliability models); at
// `at` the node's ranks stop. Detection comes from simulating that step with the node stopped
// (heartbeat for a crash, collective watchdog otherwise: replay::simulate_step); then the
// node is replaced from the hot-spare pool (or waits for repair), checked, the job restarts,
// restores the newest *durable* checkpoint (a flush still running at the kill does not count:
// the previous checkpoint is restored and nothing newer claimed), and replays the lost steps
// until it is back where it was at the kill:
//   rto = detection + repair wait + health check + restart + restore + replay of the lost work
// and beside it the closed form of the reliability model with the same inputs (detection =
// recovery.detection for a crash or the collective timeout for a hang, lost work from the
// checkpoint cycle N x step + save); they agree exactly when the kill is detected by the
// heartbeat and no flush shares the compute fabric (the deterministic case).
#pragma once

#include <nlohmann/json.hpp>

#include "models/scenario/config.h"

namespace ct::scenario {

struct DrillOptions {
  int node = -1;      // the node killed
  double at_s = 0.0;  // when, from the job's start
  bool hang = false;  // the node hangs instead of crashing
};

// The drill's report (phases, rto_s, closed_form_rto_s, lost work, GPU-hours). Throws
// ScenarioError naming --kill / --at or the scenario key.
nlohmann::json drill(const Config& config, const DrillOptions& options);

}  // namespace ct::scenario

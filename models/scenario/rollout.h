// Staged rollout: the scenario's job at growing scales — one model replica, one rail group,
// one pod, the whole job — as an acceptance team brings a cluster up. Weak scaling: the
// layout keeps TP, PP, micro-batch and per-replica batch; DP (and the global batch) grow.
//   efficiency(n)    = (tokens/s per GPU at n) / (tokens/s per GPU at the first stage)
//   doubling gain    = 2^((log T(n) - log T(m)) / log2(n/m)) - 1 between consecutive stages,
//                      the throughput added per doubling of GPUs (acceptance wants >= 0.85)
// Each stage runs on the scenario's network mode and fabric (the cluster itself stays whole:
// the job occupies the first nodes, as topology-aware placement does).
#pragma once

#include <nlohmann/json.hpp>

#include "models/scenario/config.h"

namespace ct::scenario {

nlohmann::json rollout(const Config& config);

}  // namespace ct::scenario

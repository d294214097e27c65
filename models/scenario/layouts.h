// Many layouts of one cluster, evaluated against one build of it (issue 23: a sweep reuses
// what does not change).
//
// A layout is a set of overrides of training_job.* keys (parallelism, micro-batch, batch,
// runtime, ...) applied to one base scenario. The cluster (topology and routing tables) is built
// once from the base and shared, read-only, by every layout's step; each layout gets its own
// simulation, network state and collective engine, exactly as `run` builds them, so a row's
// figures are the ones `run` reports for that layout (tests/python/test_layouts.py compares
// them). Layouts run in parallel on a oneTBB arena; row i is always layout i, so the result is
// the same at any thread count.
//
// Left out per layout, against `run`: the reliability campaign, storage, power and the report's
// tables (a sweep ranks layouts by step figures and memory; run the chosen one for the rest).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/replay/executor.h"
#include "models/scenario/config.h"

namespace ct::scenario {

struct LayoutOutcome {
  // Empty when the step ran; else why this layout has no figures (an invalid combination of
  // keys, a key outside training_job, a step the network mode cannot replay).
  std::string error;
  double step_time_s = 0, mfu = 0, hfu = 0, tflops_per_gpu = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  replay::TimeBreakdown breakdown;
  int64_t gpus = 0;
  // The most loaded pipeline stage's memory (workload::MemoryBreakdown::total) and whether
  // every stage fits its GPU; set whenever the layout is valid, even without a step.
  int64_t peak_memory_bytes = 0;
  bool fits = false;
  uint64_t events = 0;
};

// Evaluates `count` layouts of `base`: make_config(i) returns layout i's checked Config (it may
// throw ScenarioError, which becomes that row's error). Every layout must keep the base's
// cluster and network (only training_job.* differs: the caller checks the overrides);
// threads <= 0: oneTBB's default concurrency.
std::vector<LayoutOutcome> evaluate_layouts(const Config& base, size_t count,
                                            const std::function<Config(size_t)>& make_config, int threads);

}  // namespace ct::scenario

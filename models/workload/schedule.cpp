#include "models/workload/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ct::workload {

void check_interleaving(int stages, int chunks, int64_t microbatches) {
  if (chunks > 1 && microbatches % stages != 0) {
    throw std::invalid_argument(
        "training_job.parallelism.virtual_pipeline = " + std::to_string(chunks) +
        " (interleaved schedule) needs the micro-batches per step (global_batch_size / (micro_batch_size x "
        "data_parallel) = " +
        std::to_string(microbatches) + ") to be a multiple of pipeline_parallel = " + std::to_string(stages));
  }
}

std::vector<PipelinePass> pipeline_schedule(int stage, int stages, int chunks, int64_t microbatches) {
  const int64_t p = stages, v = chunks, m = microbatches;
  if (p < 1 || v < 1 || m < 1 || stage < 0 || stage >= stages) {
    throw std::invalid_argument("pipeline_schedule: bad stage/stages/chunks/microbatches");
  }
  check_interleaving(stages, chunks, microbatches);
  const int64_t total = m * v;
  auto pass = [&](int64_t k, bool forward) {
    PipelinePass out;
    out.forward = forward;
    const int64_t chunk = (k / p) % v;
    out.chunk = static_cast<int>(forward ? chunk : v - 1 - chunk);
    out.microbatch = v == 1 ? k : (k / (p * v)) * p + k % p;
    return out;
  };
  const int64_t warmup = v == 1 ? std::min<int64_t>(p - stage - 1, m)
                                : std::min<int64_t>((p - stage - 1) * 2 + (v - 1) * p, total);
  std::vector<PipelinePass> order;
  order.reserve(static_cast<size_t>(2 * total));
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f) order.push_back(pass(f, true));
  while (f < total) {
    order.push_back(pass(f++, true));
    order.push_back(pass(b++, false));
  }
  while (b < total) order.push_back(pass(b++, false));
  return order;
}

}  // namespace ct::workload

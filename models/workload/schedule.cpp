#include "models/workload/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace ct::workload {

int64_t microbatch_group(int stages, int group) { return group > 0 ? group : stages; }

void check_interleaving(int stages, int chunks, int64_t microbatches, int group) {
  if (chunks <= 1) return;
  const std::string m_text =
      "the micro-batches per step (global_batch_size / (micro_batch_size x data_parallel) = " +
      std::to_string(microbatches) + ")";
  if (group <= 0) {
    if (microbatches % stages != 0) {
      throw std::invalid_argument("training_job.parallelism.virtual_pipeline = " + std::to_string(chunks) +
                                  " (interleaved schedule) needs " + m_text +
                                  " to be a multiple of pipeline_parallel = " + std::to_string(stages) +
                                  " (or training_job.parallelism.microbatch_group set)");
    }
    return;
  }
  const std::string key = "training_job.parallelism.microbatch_group = " + std::to_string(group);
  if (group < stages || group > microbatches) {
    throw std::invalid_argument(
        key + ": expected pipeline_parallel = " + std::to_string(stages) + " to " + m_text +
        "; with fewer than pipeline_parallel the first stage waits for a "
        "chunk's input that the last stage sends only after a backward it cannot reach");
  }
  const int64_t tail = microbatches % group;
  if (tail > 0 && tail < stages) {
    throw std::invalid_argument(
        key + ": the last group would hold " + std::to_string(tail) + " of " + m_text +
        ", fewer than pipeline_parallel = " + std::to_string(stages) +
        "; expected a group size that divides them or leaves at least pipeline_parallel");
  }
}

std::vector<PipelinePass> pipeline_schedule(int stage, int stages, int chunks, int64_t microbatches,
                                            int group) {
  const int64_t p = stages, v = chunks, m = microbatches;
  if (p < 1 || v < 1 || m < 1 || stage < 0 || stage >= stages) {
    throw std::invalid_argument("pipeline_schedule: bad stage/stages/chunks/microbatches");
  }
  check_interleaving(stages, chunks, microbatches, group);
  const int64_t n = v == 1 ? 1 : microbatch_group(stages, group);
  const int64_t total = m * v;
  // The schedule table (schedule.h): entry k -> (chunk, micro-batch).
  std::vector<std::pair<int, int64_t>> table;
  table.reserve(static_cast<size_t>(total));
  if (v == 1) {
    for (int64_t mb = 0; mb < m; ++mb) table.emplace_back(0, mb);
  } else {
    for (int64_t first = 0; first < m; first += n) {
      const int64_t last = first + n >= m ? m : first + n;
      for (int c = 0; c < chunks; ++c) {
        for (int64_t mb = first; mb < last; ++mb) table.emplace_back(c, mb);
      }
    }
  }
  auto pass = [&](int64_t k, bool forward) {
    PipelinePass out;
    out.forward = forward;
    const auto& [chunk, mb] = table[static_cast<size_t>(k)];
    out.chunk = forward ? chunk : chunks - 1 - chunk;
    out.microbatch = mb;
    return out;
  };
  const int64_t warmup = v == 1 ? std::min<int64_t>(p - stage - 1, m)
                                : std::min<int64_t>((p - stage - 1) * 2 + (v - 1) * n, total);
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

// Pipeline schedules: the order in which one pipeline rank runs forward (F) and backward
// (B) passes of (model chunk, micro-batch), as Megatron-LM issues them.
//
// 1F1B (Narayanan et al., SC'21, Sec. 2.2.1; v = 1): rank s of p runs
//   warmup   = min(p - s - 1, m) forwards,
//   steady   = m - warmup pairs (F then B),
//   cooldown = warmup backwards.
// Interleaved 1F1B (v > 1 chunks per rank; Sec. 2.2.2): the m x v virtual micro-batches
// are issued in groups of p micro-batches per chunk; the k-th forward runs
//   chunk     = (k / p) mod v,   micro-batch = (k / (p v)) p + k mod p,
// the k-th backward runs chunk v - 1 - (k / p) mod v with the same micro-batch rule, and
//   warmup = min((p - s - 1) * 2 + (v - 1) * p, m v).
// Megatron requires m to be a multiple of p for the interleaved schedule.
// Chunk c of rank s holds virtual stage c * p + s (its layers: layers_per_chunk of them).
#pragma once

#include <cstdint>
#include <vector>

namespace ct::workload {

struct PipelinePass {
  bool forward = true;
  int chunk = 0;
  int64_t microbatch = 0;
};

// Throws std::invalid_argument naming the keys if v > 1 and m is not a multiple of p.
void check_interleaving(int stages, int chunks, int64_t microbatches);

// Throws as check_interleaving does.
std::vector<PipelinePass> pipeline_schedule(int stage, int stages, int chunks, int64_t microbatches);

}  // namespace ct::workload

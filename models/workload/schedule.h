// Pipeline schedules: the order in which one pipeline rank runs forward (F) and backward
// (B) passes of (model chunk, micro-batch), as Megatron-LM issues them.
//
// 1F1B (Narayanan et al., SC'21, Sec. 2.2.1; v = 1): rank s of p runs
//   warmup   = min(p - s - 1, m) forwards,
//   steady   = m - warmup pairs (F then B),
//   cooldown = warmup backwards.
// Interleaved 1F1B (v > 1 chunks per rank; Sec. 2.2.2): the m x v virtual micro-batches
// are issued in groups of n micro-batches per chunk (n = p unless given: Megatron-Core's
// microbatch_group_size_per_vp_stage, megatron/core/pipeline_parallel/schedules.py
// get_schedule_table; Llama 3's N, Grattafiori et al. 2024, Sec. 3.3.2 and Figure 6). The
// schedule table lists, group after group, every chunk of the group's micro-batches:
//   groups [0, n), [n, 2n), ..., the last one [n floor((m - 1) / n), m),
//   within a group: chunk 0 on each of its micro-batches, then chunk 1, ..., chunk v - 1;
// the k-th forward runs entry k, the k-th backward entry k with chunk v - 1 - chunk, and
//   warmup = min((p - s - 1) * 2 + (v - 1) * n, m v)    (get_pp_rank_microbatches).
// With n = p and m a multiple of p, entry k is chunk (k / p) mod v and micro-batch
// (k / (p v)) p + k mod p (SC'21's rule). As Megatron-Core, p <= n <= m and the last group's
// size (m mod n, when not 0) at least p: with n < p the first stage's warm-up reaches chunk
// 1 of a micro-batch whose chunk-0 output the last stage sends only after a backward that
// needs the first stage's own later backward (a cycle; the executor reports it as a stall).
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

// The micro-batch group n of an interleaved schedule: `group`, or p when 0.
int64_t microbatch_group(int stages, int group);

// Throws std::invalid_argument naming the keys if v > 1 and the micro-batches cannot be
// grouped: n outside [p, m], a last group shorter than p, or with n unset m not a multiple of p.
void check_interleaving(int stages, int chunks, int64_t microbatches, int group = 0);

// Throws as check_interleaving does. `group`: n (0 = p).
std::vector<PipelinePass> pipeline_schedule(int stage, int stages, int chunks, int64_t microbatches,
                                            int group = 0);

}  // namespace ct::workload

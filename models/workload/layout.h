// Parallel layout of a training job: the divisibility rules Megatron-LM enforces, and the
// number of micro-batches per iteration.
//
//   GPUs used            = TP x PP x DP x CP            (EP is carved out of DP x CP)
//   micro-batches m      = global_batch_size / (micro_batch_size x DP)
//   gradient accumulation steps = m (one optimizer step per iteration)
// Rules (Narayanan et al. SC'21 Sec. 2-3; Megatron-core arguments.py, moe and context
// parallel docs): TP | heads, TP | kv_heads, TP | ffn_hidden, PP x VP | layers,
// micro x DP | global, EP | experts, EP | DP x CP, 2 CP | seq_length (load-balanced causal
// context parallelism splits the sequence into 2 CP chunks), TP x PP x DP x CP <= GPUs in the
// cluster (fewer leaves spare nodes), zero_stage in 0..3, recompute in none|selective|full.
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::workload {

// Throws std::invalid_argument listing every violated rule, one per line; each line names
// the scenario key paths (training_job....), their values and the divisibility that failed.
void validate(const JobSpec& job, int64_t gpus_in_cluster);

// TP x PP x DP x CP.
int64_t gpus_used(const ParallelSpec& p);

// global_batch_size / (micro_batch_size x data_parallel); assumes a validated job.
int64_t microbatches(const JobSpec& job);
inline int64_t gradient_accumulation_steps(const JobSpec& job) { return microbatches(job); }

// Layers held by one pipeline rank (all its virtual chunks together) and by one chunk.
int64_t layers_per_stage(const JobSpec& job);
int64_t layers_per_chunk(const JobSpec& job);

}  // namespace ct::workload

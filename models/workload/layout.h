// Parallel layout of a training job: the divisibility rules Megatron-LM enforces, and the
// number of micro-batches per iteration.
//
//   GPUs used            = TP x PP x DP x CP            (EP is carved out of DP x CP)
//   micro-batches m      = global_batch_size / (micro_batch_size x DP)
//   gradient accumulation steps = m (one optimizer step per iteration)
// Rules (Narayanan et al. SC'21 Sec. 2-3; Megatron-core arguments.py, moe and context
// parallel docs): TP | heads, TP | kv_heads, TP | ffn_hidden, PP x VP <= layers,
// micro x DP | global, EP | experts, EP | DP x CP, 2 CP | seq_length (load-balanced causal
// context parallelism splits the sequence into 2 CP chunks), TP x PP x DP x CP <= GPUs in the
// cluster (fewer leaves spare nodes), zero_stage in 0..3, recompute in none|selective|full.
#pragma once

#include <cstdint>

#include "models/workload/model_spec.h"

namespace ct::workload {

// Ranks a ZeRO stage shards over: shard_size, or DP x CP when 0.
int64_t zero_shard_degree(const ParallelSpec& p);

// Throws std::invalid_argument listing every violated rule, one per line; each line names
// the scenario key paths (training_job....), their values and the divisibility that failed.
void validate(const JobSpec& job, int64_t gpus_in_cluster);

// TP x PP x DP x CP.
int64_t gpus_used(const ParallelSpec& p);

// global_batch_size / (micro_batch_size x data_parallel); assumes a validated job.
int64_t microbatches(const JobSpec& job);
inline int64_t gradient_accumulation_steps(const JobSpec& job) { return microbatches(job); }

// Layers of each virtual stage (chunk c of rank s is virtual stage c p + s). When PP x VP
// does not divide the layers, every virtual stage holds ceil(L / (p v)) layers except
// p v ceil(L / (p v)) - L of them, which hold one fewer, taken from the ends inwards: the
// first, the last, the second, the second-to-last... (the stages that also carry the embedding
// and the loss; Llama 3 405B's 126 layers on 16 stages: 7, 8 x 14, 7, as Dubey et al. 2024
// Sec. 3.3.2 describe, and Megatron-core's --decoder-first/last-pipeline-num-layers allow).
int64_t layers_in_virtual_stage(const JobSpec& job, int64_t virtual_stage);
int64_t layers_in_chunk(const JobSpec& job, int stage, int chunk);
int64_t layers_in_stage(const JobSpec& job, int stage);
// Of those, the MoE model's leading dense layers (model.moe.dense_layers): virtual stages hold
// consecutive layers in virtual-stage order, so these are the first ones of the first chunks.
int64_t dense_layers_in_virtual_stage(const JobSpec& job, int64_t virtual_stage);
int64_t dense_layers_in_chunk(const JobSpec& job, int stage, int chunk);
// Global (0-based) index of the first layer of a pipeline rank's chunk (virtual stage c p + s).
int64_t first_layer_of_chunk(const JobSpec& job, int stage, int chunk);
int64_t dense_layers_in_stage(const JobSpec& job, int stage);
// Layers of chunk c of rank s that recompute their forward before backward (full recompute
// with recompute_layers = N: the chunk's first min(N, layers) layers; all when N = 0; none
// for other granularities, whose recompute is per layer, see layer_ops.h).
int64_t recomputed_layers_in_chunk(const JobSpec& job, int stage, int chunk);
int64_t recomputed_layers_in_stage(const JobSpec& job, int stage);
// Recomputed share of all layers (hardware FLOPs).
double recomputed_layer_fraction(const JobSpec& job);
// The most layers any pipeline rank (all its chunks together) or any chunk holds.
int64_t layers_per_stage(const JobSpec& job);
int64_t layers_per_chunk(const JobSpec& job);

}  // namespace ct::workload

// Save, restore and retention of one checkpoint on the storage system.
//
// Synchronous save (training stalls until the checkpoint is durable):
//   blocking = metadata_latency + B / min(W, w_c x n_w)
//   B = total checkpoint bytes, W = aggregate write bandwidth, w_c = per-client (per-node)
//   write limit (unlimited when 0), n_w = nodes holding a writer. With balanced writers
//   this equals max(B / W, bytes per writing node / w_c), the slower of the two bottlenecks.
// Asynchronous save (Megatron async_save / torch.distributed.checkpoint async):
//   blocking = b_g / P   (each GPU copies its b_g = per_gpu_bytes to pinned host memory over
//   PCIe bandwidth P, all GPUs in parallel),
//   flush    = the synchronous time above, in the background. In this first version the
//   flush competes with nothing (training traffic and data loading do not slow it, and it
//   does not slow them); the checkpoint only becomes durable at blocking + flush.
// Restore (fully parallel load: every node reads a share once; redistributing replicated
//   shards over the fabric is not modelled):
//   restore = metadata_latency + B / min(R, r_c x n)   (R aggregate read, r_c per node,
//   n nodes of the job).
// Retention: keep_last_n x B must fit the storage capacity when one is given.
#pragma once

#include "models/storage/checkpoint.h"
#include "models/storage/storage_spec.h"
#include "sim/units.h"

namespace ct::storage {

struct CheckpointTiming {
  sim::Duration blocking;          // training stall per checkpoint (the "d" of Young/Daly)
  sim::Duration flush;             // background write after the snapshot (zero when synchronous)
  sim::Duration durable;           // save start to checkpoint durable: blocking + flush
  sim::Duration restore;           // reading the checkpoint back after a restart
  double write_bytes_per_s = 0.0;  // effective write bandwidth min(W, w_c n_w)
  double read_bytes_per_s = 0.0;   // effective read bandwidth min(R, r_c n)
};

// Throws std::invalid_argument naming the scenario key for a zero write/read bandwidth
// (cluster.storage.write / cluster.storage.read) or, when async, zero PCIe (cluster.pcie).
CheckpointTiming checkpoint_timing(const CheckpointSize& size, const StorageSpec& storage,
                                   const HostSpec& host, bool async_save);

// Throws std::invalid_argument naming training_job.checkpoint.keep_last_n when
// keep_last_n < 1 or keep_last_n x total_bytes exceeds a non-zero capacity.
void check_retention(const CheckpointSize& size, int keep_last_n, const StorageSpec& storage);

}  // namespace ct::storage

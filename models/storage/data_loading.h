// Training-data reads per step against the storage read bandwidth.
//
//   tokens per step  T = global_batch_size x seq_length
//   bytes per step   B = T x b, b = bytes per token id in the pre-tokenized dataset
//                    (Megatron's indexed dataset stores uint16 ids when the vocabulary has
//                    fewer than 65,500 entries, int32 otherwise: token_bytes_for_vocab)
//   read time        r = B / min(R, r_c x n)   (R aggregate read bandwidth, r_c per node)
//   stall per step   max(0, r - step_time): the loader prefetches the next batch while the
//                    current step computes, so it only stalls training when reading a
//                    batch takes longer than a step. Document/index metadata is opened once
//                    at start-up (memory-mapped), so there is no per-step metadata latency.
#pragma once

#include <cstdint>

#include "models/storage/storage_spec.h"
#include "sim/units.h"

namespace ct::storage {

struct DataLoading {
  int64_t tokens_per_step = 0;
  int64_t bytes_per_step = 0;
  sim::Duration read_time;                 // r
  sim::Duration stall_per_step;            // 0 when the loader keeps up
  bool keeps_up = true;                    // r <= step_time
  double required_read_bytes_per_s = 0.0;  // B / step_time: the bandwidth that would keep up
};

// 2 for vocabularies below 65,500 (uint16 ids), 4 otherwise (int32).
int token_bytes_for_vocab(int64_t vocab);

// Throws std::invalid_argument naming the key for non-positive global batch, sequence
// length or bytes per token, a zero read bandwidth (cluster.storage.read), or a
// non-positive step time.
DataLoading data_loading(int64_t global_batch_size, int64_t seq_length, int bytes_per_token, int nodes,
                         const StorageSpec& storage, sim::Duration step_time);

}  // namespace ct::storage

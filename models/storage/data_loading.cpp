// Data-loader stall per step; the maths is in data_loading.h.
#include "models/storage/data_loading.h"

#include <algorithm>
#include <stdexcept>

namespace ct::storage {

int token_bytes_for_vocab(int64_t vocab) { return vocab < 65500 ? 2 : 4; }

DataLoading data_loading(int64_t global_batch_size, int64_t seq_length, int bytes_per_token, int nodes,
                         const StorageSpec& storage, sim::Duration step_time) {
  if (global_batch_size <= 0) throw std::invalid_argument("training_job.global_batch_size must be positive");
  if (seq_length <= 0) throw std::invalid_argument("training_job.model.seq_length must be positive");
  if (bytes_per_token <= 0) throw std::invalid_argument("data loading: bytes per token must be positive");
  if (storage.read.bps() <= 0.0) throw std::invalid_argument("cluster.storage.read must be positive");
  if (step_time <= sim::Duration::zero())
    throw std::invalid_argument("data loading: step time must be positive");

  DataLoading d;
  d.tokens_per_step = global_batch_size * seq_length;
  d.bytes_per_step = d.tokens_per_step * bytes_per_token;
  double bw = storage.read.bytes_per_second();
  if (storage.per_client_read.bps() > 0.0 && nodes > 0) {
    bw = std::min(bw, storage.per_client_read.bytes_per_second() * static_cast<double>(nodes));
  }
  d.read_time = sim::Duration::from_seconds(static_cast<double>(d.bytes_per_step) / bw);
  d.keeps_up = d.read_time <= step_time;
  d.stall_per_step = d.keeps_up ? sim::Duration::zero() : d.read_time - step_time;
  d.required_read_bytes_per_s = static_cast<double>(d.bytes_per_step) / step_time.seconds();
  return d;
}

}  // namespace ct::storage

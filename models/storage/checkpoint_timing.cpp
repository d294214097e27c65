// Checkpoint save/restore times and retention; the maths is in checkpoint_timing.h.
#include "models/storage/checkpoint_timing.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ct::storage {

namespace {

// min(aggregate, per_client x clients) in bytes/s; a zero per-client limit does not limit.
double effective(sim::Bandwidth aggregate, sim::Bandwidth per_client, int clients) {
  double bw = aggregate.bytes_per_second();
  if (per_client.bps() > 0.0 && clients > 0) {
    bw = std::min(bw, per_client.bytes_per_second() * static_cast<double>(clients));
  }
  return bw;
}

sim::Duration seconds(double s) { return sim::Duration::from_seconds(s); }

}  // namespace

CheckpointTiming checkpoint_timing(const CheckpointSize& size, const StorageSpec& storage,
                                   const HostSpec& host, bool async_save) {
  if (storage.write.bps() <= 0.0) {
    throw std::invalid_argument("cluster.storage.write must be positive to save checkpoints");
  }
  if (storage.read.bps() <= 0.0) {
    throw std::invalid_argument("cluster.storage.read must be positive to restore checkpoints");
  }
  CheckpointTiming t;
  t.write_bytes_per_s = effective(storage.write, storage.per_client_write, size.writer_nodes);
  t.read_bytes_per_s = effective(storage.read, storage.per_client_read, size.nodes);
  const sim::Duration write =
      storage.metadata_latency + seconds(size.total_bytes_as_double() / t.write_bytes_per_s);
  t.restore = storage.metadata_latency + seconds(size.total_bytes_as_double() / t.read_bytes_per_s);
  if (async_save) {
    if (host.pcie_to_host.bps() <= 0.0) {
      throw std::invalid_argument("cluster.pcie must be positive for training_job.checkpoint.async_save");
    }
    t.blocking = host.pcie_to_host.transfer_time(sim::Bytes{size.per_gpu_bytes});
    t.flush = write;
  } else {
    t.blocking = write;
    t.flush = sim::Duration::zero();
  }
  t.durable = t.blocking + t.flush;
  return t;
}

void check_retention(const CheckpointSize& size, int keep_last_n, const StorageSpec& storage) {
  if (keep_last_n < 1) {
    throw std::invalid_argument("training_job.checkpoint.keep_last_n must be at least 1, got " +
                                std::to_string(keep_last_n));
  }
  if (storage.capacity_bytes <= 0) return;
  const double needed = size.total_bytes_as_double() * keep_last_n;
  if (needed > static_cast<double>(storage.capacity_bytes)) {
    throw std::invalid_argument("training_job.checkpoint.keep_last_n = " + std::to_string(keep_last_n) +
                                " checkpoints of " + sim::format_bytes(sim::Bytes{size.total_bytes}) +
                                " need " + sim::format_bytes(sim::Bytes{static_cast<int64_t>(needed)}) +
                                ", more than the storage capacity " +
                                sim::format_bytes(sim::Bytes{storage.capacity_bytes}));
  }
}

}  // namespace ct::storage

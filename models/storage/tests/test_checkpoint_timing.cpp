#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "models/storage/checkpoint_timing.h"

namespace ct::storage {
namespace {

using sim::Bandwidth;
using sim::Duration;

CheckpointSize size_of(int64_t total, int64_t per_gpu, int nodes, int writer_nodes) {
  CheckpointSize s;
  s.total_bytes = total;
  s.per_gpu_bytes = per_gpu;
  s.nodes = nodes;
  s.writer_nodes = writer_nodes;
  s.gpus = int64_t{nodes} * 8;
  s.writers = int64_t{writer_nodes} * 8;
  return s;
}

StorageSpec storage() {
  StorageSpec st;
  st.read = Bandwidth::bytes_per_s(2e12);
  st.write = Bandwidth::bytes_per_s(1e12);
  st.metadata_latency = Duration::ms(1);
  return st;
}

HostSpec host() { return HostSpec{8, Bandwidth::bytes_per_s(50e9)}; }

TEST(CheckpointTiming, SynchronousSaveIsBytesOverAggregateWrite) {
  const CheckpointSize s = size_of(2'400'000'000'000, 2'000'000'000, 192, 192);
  const CheckpointTiming t = checkpoint_timing(s, storage(), host(), false);
  EXPECT_NEAR(t.blocking.seconds(), 0.001 + 2.4, 1e-9);
  EXPECT_EQ(t.flush, Duration::zero());
  EXPECT_EQ(t.durable, t.blocking);
  EXPECT_NEAR(t.restore.seconds(), 0.001 + 1.2, 1e-9);
}

TEST(CheckpointTiming, PerClientLimitBindsWithFewWriters) {
  StorageSpec st = storage();
  st.per_client_write = Bandwidth::bytes_per_s(25e9);  // 8 writers x 25 GB/s = 200 GB/s < 1 TB/s
  st.per_client_read = Bandwidth::bytes_per_s(25e9);   // 192 x 25 GB/s = 4.8 TB/s > 2 TB/s
  const CheckpointSize s = size_of(2'400'000'000'000, 2'000'000'000, 192, 8);
  const CheckpointTiming t = checkpoint_timing(s, st, host(), false);
  EXPECT_DOUBLE_EQ(t.write_bytes_per_s, 200e9);
  EXPECT_NEAR(t.blocking.seconds(), 0.001 + 12.0, 1e-9);
  EXPECT_DOUBLE_EQ(t.read_bytes_per_s, 2e12);
}

TEST(CheckpointTiming, AsyncBlocksOnlyForTheHostSnapshot) {
  const CheckpointSize s = size_of(2'400'000'000'000, 2'000'000'000, 192, 192);
  const CheckpointTiming t = checkpoint_timing(s, storage(), host(), true);
  EXPECT_NEAR(t.blocking.seconds(), 2e9 / 50e9, 1e-9);
  EXPECT_NEAR(t.flush.seconds(), 0.001 + 2.4, 1e-9);
  EXPECT_EQ(t.durable, t.blocking + t.flush);
  EXPECT_THROW(checkpoint_timing(s, storage(), HostSpec{8, Bandwidth{}}, true), std::invalid_argument);
}

TEST(CheckpointTiming, ZeroBandwidthNamesTheKey) {
  StorageSpec st = storage();
  st.write = Bandwidth{};
  try {
    checkpoint_timing(size_of(1000, 10, 1, 1), st, host(), false);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.storage.write"), std::string::npos);
  }
}

TEST(Retention, KeepLastNMustFitCapacity) {
  StorageSpec st = storage();
  const CheckpointSize s = size_of(2'000'000'000'000, 1, 1, 1);
  EXPECT_NO_THROW(check_retention(s, 5, st));  // unlimited capacity
  st.capacity_bytes = 10'000'000'000'000;
  EXPECT_NO_THROW(check_retention(s, 5, st));
  try {
    check_retention(s, 6, st);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("training_job.checkpoint.keep_last_n"), std::string::npos);
  }
  EXPECT_THROW(check_retention(s, 0, st), std::invalid_argument);
}

}  // namespace
}  // namespace ct::storage

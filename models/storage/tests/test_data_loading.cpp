#include <gtest/gtest.h>

#include <stdexcept>

#include "models/storage/data_loading.h"

namespace ct::storage {
namespace {

using sim::Bandwidth;
using sim::Duration;

TEST(DataLoading, TokenBytesFollowVocabulary) {
  EXPECT_EQ(token_bytes_for_vocab(51200), 2);
  EXPECT_EQ(token_bytes_for_vocab(128256), 4);
}

TEST(DataLoading, KeepsUpWithAFastFileSystem) {
  StorageSpec st;
  st.read = Bandwidth::bytes_per_s(2e12);
  // 1536 x 2048 tokens x 2 B = 6.29 MB per step: 3.1 us at 2 TB/s.
  const DataLoading d = data_loading(1536, 2048, 2, 192, st, Duration::s(10));
  EXPECT_EQ(d.tokens_per_step, 1536 * 2048);
  EXPECT_EQ(d.bytes_per_step, 1536 * 2048 * 2);
  EXPECT_NEAR(d.read_time.seconds(), 1536.0 * 2048 * 2 / 2e12, 1e-12);
  EXPECT_TRUE(d.keeps_up);
  EXPECT_EQ(d.stall_per_step, Duration::zero());
}

TEST(DataLoading, StallsWhenReadingIsSlowerThanAStep) {
  StorageSpec st;
  st.read = Bandwidth::bytes_per_s(1e6);  // 1 MB/s
  const DataLoading d = data_loading(1000, 1000, 4, 10, st, Duration::s(1));
  EXPECT_NEAR(d.read_time.seconds(), 4.0, 1e-12);
  EXPECT_FALSE(d.keeps_up);
  EXPECT_NEAR(d.stall_per_step.seconds(), 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.required_read_bytes_per_s, 4e6);
  // A per-node limit can bind too: 10 nodes x 50 kB/s = 500 kB/s.
  st.per_client_read = Bandwidth::bytes_per_s(5e4);
  EXPECT_NEAR(data_loading(1000, 1000, 4, 10, st, Duration::s(1)).read_time.seconds(), 8.0, 1e-12);
}

TEST(DataLoading, RejectsBadInputs) {
  StorageSpec st;
  st.read = Bandwidth::bytes_per_s(1e9);
  EXPECT_THROW(data_loading(0, 10, 2, 1, st, Duration::s(1)), std::invalid_argument);
  EXPECT_THROW(data_loading(1, 10, 2, 1, st, Duration::zero()), std::invalid_argument);
  EXPECT_THROW(data_loading(1, 10, 2, 1, StorageSpec{}, Duration::s(1)), std::invalid_argument);
}

}  // namespace
}  // namespace ct::storage

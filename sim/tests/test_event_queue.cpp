// One parametrized suite for every pending-event-set variant (heap arity 2, 4, 8).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "sim/event_queue.h"
#include "sim/rng.h"

using namespace ct::sim;

namespace {

struct NullHandler final : EventHandler {
  void on_event(uint64_t) override {}
};

template <typename Queue>
class EventQueueTest : public ::testing::Test {
 protected:
  Queue queue;
  NullHandler handler;
};

using Queues = ::testing::Types<BasicEventQueue<2>, BasicEventQueue<4>, BasicEventQueue<8>>;
TYPED_TEST_SUITE(EventQueueTest, Queues);

TYPED_TEST(EventQueueTest, OrdersByTimeThenPriorityThenInsertion) {
  auto& q = this->queue;
  q.push(30, 128, &this->handler, 1);
  q.push(10, 128, &this->handler, 2);
  q.push(10, 5, &this->handler, 3);    // higher priority (smaller) at the same time
  q.push(10, 128, &this->handler, 4);  // same key as tag 2, inserted later
  q.push(20, 0, &this->handler, 5);
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 2, 4, 5, 1}));
}

TYPED_TEST(EventQueueTest, ZeroDelayLaneKeepsTotalOrder) {
  auto& q = this->queue;
  q.push(10, 128, &this->handler, 1);
  q.push(10, 200, &this->handler, 2);  // lower priority than the lane's default
  q.push_now(10, &this->handler, 3);
  q.push_now(10, &this->handler, 4);
  q.push(10, 1, &this->handler, 5);
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 1, 3, 4, 2}));
}

TYPED_TEST(EventQueueTest, CancelAndReschedule) {
  auto& q = this->queue;
  Timer a(&this->handler, 1), b(&this->handler, 2), c(&this->handler, 3);
  q.schedule(a, 10, 128);
  q.schedule(b, 20, 128);
  q.schedule(c, 30, 128);
  EXPECT_TRUE(b.pending());
  q.cancel(b);
  EXPECT_FALSE(b.pending());
  q.cancel(b);             // cancelling an idle timer is harmless
  q.schedule(c, 5, 128);   // move earlier
  q.schedule(a, 40, 128);  // move later
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{3, 1}));
  EXPECT_FALSE(a.pending());
  EXPECT_FALSE(c.pending());
}

// Random pushes, timer moves and cancels against std::multimap keyed the same way.
TYPED_TEST(EventQueueTest, StressAgainstMultimap) {
  auto& q = this->queue;
  Rng rng(7, 1);
  std::vector<std::unique_ptr<Timer>> timers;
  for (uint64_t i = 0; i < 200; ++i) timers.push_back(std::make_unique<Timer>(&this->handler, 1000000 + i));
  std::map<std::pair<int64_t, uint64_t>, uint64_t> reference;  // (time, seq) -> tag
  std::map<uint64_t, std::pair<int64_t, uint64_t>> timer_key;  // timer idx -> key
  uint64_t seq = 0;
  int64_t now = 0;
  for (int step = 0; step < 50000; ++step) {
    const uint64_t op = rng.below(10);
    if (op < 4) {
      const int64_t t = now + static_cast<int64_t>(rng.below(1000));
      q.push(t, 128, &this->handler, seq);
      reference.emplace(std::make_pair(t, seq), seq);
      ++seq;
    } else if (op < 7) {
      const size_t k = rng.below(timers.size());
      const int64_t t = now + static_cast<int64_t>(rng.below(1000));
      if (timer_key.count(k)) reference.erase(timer_key[k]);
      q.schedule(*timers[k], t, 128);
      timer_key[k] = {t, seq};
      reference.emplace(std::make_pair(t, seq), 1000000 + k);
      ++seq;
    } else if (op < 8) {
      const size_t k = rng.below(timers.size());
      q.cancel(*timers[k]);
      if (timer_key.count(k)) {
        reference.erase(timer_key[k]);
        timer_key.erase(k);
      }
    } else if (!reference.empty()) {
      ASSERT_EQ(q.size(), reference.size());
      const FiredEvent e = q.pop();
      const auto it = reference.begin();
      ASSERT_EQ(e.time_ps, it->first.first);
      ASSERT_EQ(e.tag, it->second);
      if (e.tag >= 1000000) timer_key.erase(e.tag - 1000000);
      now = e.time_ps;
      reference.erase(it);
    }
  }
  while (!reference.empty()) {
    const FiredEvent e = q.pop();
    ASSERT_EQ(e.tag, reference.begin()->second);
    reference.erase(reference.begin());
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace

namespace {
struct Null final : EventHandler {
  void on_event(uint64_t) override {}
};
}  // namespace

// The 32-bit insertion sequence is renumbered when it wraps; order must not change.
TEST(EventQueueWrap, SequenceRenumberingKeepsOrder) {
  BasicEventQueue<4> q;
  Null h;
  Timer t(&h, 777);
  q.set_sequence_for_test((uint64_t{1} << 32) - 3);
  q.push(10, 128, &h, 1);
  q.push_now(0, &h, 2);
  q.schedule(t, 10, 128);
  q.push(10, 128, &h, 3);  // wraps here
  q.push(5, 128, &h, 4);
  q.push(10, 128, &h, 5);
  q.schedule(t, 10, 128);  // moved after 5
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.pop().tag);
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 4, 1, 3, 5, 777}));
}

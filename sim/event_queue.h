// Pending-event set: a flat d-ary min-heap plus a FIFO lane for zero-delay events.
//
// Order is total and deterministic: key = (time, priority, insertion sequence), packed as
// (int64 time, uint64 order) with order = priority << 56 | sequence. Ties never depend on
// pointers. Heap operations are O(log_d n); cancel and reschedule of a Timer are
// O(log_d n) because a Timer stores its own heap index (intrusive handle). Events that
// fire "now" with the default priority go to a ring buffer instead of the heap; pop()
// takes whichever of heap top and ring front has the smaller key, so the lane changes
// speed, never order. Storage grows geometrically and is reused: no allocation per event.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

namespace ct::sim {

class EventHandler {
 public:
  virtual void on_event(uint64_t tag) = 0;

 protected:
  EventHandler() = default;
  EventHandler(const EventHandler&) = default;
  EventHandler& operator=(const EventHandler&) = default;
  ~EventHandler() = default;
};

// A cancellable, reschedulable event owned by a component (one per busy server).
class Timer {
 public:
  Timer(EventHandler* handler, uint64_t tag) : handler_(handler), tag_(tag) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  [[nodiscard]] bool pending() const { return index_ != kIdle; }
  [[nodiscard]] int64_t time_ps() const { return time_ps_; }
  void set_tag(uint64_t tag) { tag_ = tag; }

 private:
  template <int Arity> friend class BasicEventQueue;
  static constexpr uint32_t kIdle = 0xffffffffU;
  EventHandler* handler_;
  uint64_t tag_;
  int64_t time_ps_ = 0;
  uint32_t index_ = kIdle;
};

struct FiredEvent {
  int64_t time_ps;
  EventHandler* handler;
  uint64_t tag;
};

template <int Arity>
class BasicEventQueue {
  static_assert(Arity >= 2);

 public:
  static constexpr uint8_t kDefaultPriority = 128;

  [[nodiscard]] bool empty() const { return heap_.empty() && ring_size_ == 0; }
  [[nodiscard]] size_t size() const { return heap_.size() + ring_size_; }

  void push(int64_t time_ps, uint8_t priority, EventHandler* handler, uint64_t tag) {
    heap_.push_back(Entry{time_ps, next_order(priority), handler, tag});
    sift_up(heap_.size() - 1);
  }

  // Zero-delay lane: the caller guarantees time_ps is the current time.
  void push_now(int64_t time_ps, EventHandler* handler, uint64_t tag) {
    if (ring_size_ == ring_.size()) grow_ring();
    ring_[(ring_head_ + ring_size_) & (ring_.size() - 1)] =
        Entry{time_ps, next_order(kDefaultPriority), handler, tag};
    ++ring_size_;
  }

  // Schedules a timer, or moves it if it is already pending.
  void schedule(Timer& timer, int64_t time_ps, uint8_t priority) {
    timer.time_ps_ = time_ps;
    const Entry e{time_ps, next_order(priority), nullptr, reinterpret_cast<uint64_t>(&timer)};
    if (timer.pending()) {
      const size_t i = timer.index_;
      const bool earlier = less(e, heap_[i]);
      heap_[i] = e;
      if (earlier) sift_up(i);
      else sift_down(i);
    } else {
      heap_.push_back(e);
      sift_up(heap_.size() - 1);
    }
  }

  void cancel(Timer& timer) {
    if (!timer.pending()) return;
    const size_t i = timer.index_;
    timer.index_ = Timer::kIdle;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    const bool earlier = less(last, heap_[i]);
    place(i, last);
    if (earlier) sift_up(i);
    else sift_down(i);
  }

  [[nodiscard]] int64_t next_time_ps() const {
    assert(!empty());
    return take_ring() ? ring_[ring_head_].time : heap_.front().time;
  }

  FiredEvent pop() {
    assert(!empty());
    Entry e;
    if (take_ring()) {
      e = ring_[ring_head_];
      ring_head_ = (ring_head_ + 1) & (ring_.size() - 1);
      --ring_size_;
    } else {
      e = heap_.front();
      const Entry last = heap_.back();
      heap_.pop_back();
      if (!heap_.empty()) {
        place(0, last);
        sift_down(0);
      }
    }
    if (e.handler == nullptr) {
      auto* timer = reinterpret_cast<Timer*>(e.tag);
      timer->index_ = Timer::kIdle;
      return FiredEvent{e.time, timer->handler_, timer->tag_};
    }
    return FiredEvent{e.time, e.handler, e.tag};
  }

  void clear() {
    for (auto& e : heap_) {
      if (e.handler == nullptr) reinterpret_cast<Timer*>(e.tag)->index_ = Timer::kIdle;
    }
    heap_.clear();
    ring_size_ = 0;
    ring_head_ = 0;
  }

 private:
  struct Entry {
    int64_t time;
    uint64_t order;
    EventHandler* handler;  // nullptr: tag holds the Timer*
    uint64_t tag;
  };

  static bool less(const Entry& a, const Entry& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
  }

  uint64_t next_order(uint8_t priority) {
    return (static_cast<uint64_t>(priority) << 56) | (sequence_++ & ((uint64_t{1} << 56) - 1));
  }

  [[nodiscard]] bool take_ring() const {
    if (ring_size_ == 0) return false;
    if (heap_.empty()) return true;
    return !less(heap_.front(), ring_[ring_head_]);
  }

  void place(size_t i, const Entry& e) {
    heap_[i] = e;
    if (e.handler == nullptr) reinterpret_cast<Timer*>(e.tag)->index_ = static_cast<uint32_t>(i);
  }

  void sift_up(size_t i) {
    const Entry e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / Arity;
      if (!less(e, heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
  }

  void sift_down(size_t i) {
    const Entry e = heap_[i];
    const size_t n = heap_.size();
    while (true) {
      const size_t first = i * Arity + 1;
      if (first >= n) break;
      const size_t last = first + Arity < n ? first + Arity : n;
      size_t best = first;
      for (size_t c = first + 1; c < last; ++c) {
        if (less(heap_[c], heap_[best])) best = c;
      }
      if (!less(heap_[best], e)) break;
      place(i, heap_[best]);
      i = best;
    }
    place(i, e);
  }

  void grow_ring() {
    std::vector<Entry> bigger(ring_.empty() ? 64 : ring_.size() * 2);
    for (size_t k = 0; k < ring_size_; ++k) bigger[k] = ring_[(ring_head_ + k) & (ring_.size() - 1)];
    ring_ = std::move(bigger);
    ring_head_ = 0;
  }

  std::vector<Entry> heap_;
  std::vector<Entry> ring_;
  size_t ring_head_ = 0;
  size_t ring_size_ = 0;
  uint64_t sequence_ = 0;
};

using EventQueue = BasicEventQueue<4>;

}  // namespace ct::sim

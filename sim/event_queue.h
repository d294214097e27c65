// Pending-event set: a flat d-ary min-heap plus a FIFO lane for zero-delay events.
//
// Order is total and deterministic: (time, priority, insertion sequence); ties never depend
// on pointers. Each pending event is one 16-byte key in the heap,
//
//   key = (time + 2^63) << 64 | priority << 56 | sequence << 24 | timer << 23 | slot
//
// so one unsigned 128-bit compare orders two events, and siblings of a 4-ary heap share a
// cache line. The event's handler and tag sit in a slot pool indexed by `slot` (slots are
// reused last-freed-first, so the slot a handler frees is hot when it schedules the next
// event). The 32-bit sequence is renumbered in key order when it wraps, which keeps the
// order of pending events and puts new events after them, as the full count would.
// Heap operations are O(log_d n); a Timer (timer bit set) stores its heap index, so cancel
// and reschedule are O(log_d n) (intrusive handle). Events that fire "now" with the
// default priority go to a ring instead of the heap; pop() takes whichever of heap top and
// ring front has the smaller key, so the lane changes speed, never order. Storage grows
// geometrically and is reused: no allocation per event in steady state.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <new>
#include <stdexcept>
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
  template <int Arity>
  friend class BasicEventQueue;
  static constexpr uint32_t kIdle = 0xffffffffU;
  EventHandler* handler_;
  uint64_t tag_;
  int64_t time_ps_ = 0;
  uint32_t index_ = kIdle;
};

// Allocates on cache-line boundaries, so that a heap's sibling groups do not straddle lines.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
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
  static constexpr size_t kMaxPending = size_t{1} << 23;

  [[nodiscard]] bool empty() const { return keys_.empty() && ring_size_ == 0; }
  [[nodiscard]] size_t size() const { return keys_.size() + ring_size_; }

  void push(int64_t time_ps, uint8_t priority, EventHandler* handler, uint64_t tag) {
    keys_.push_back(make_key(time_ps, priority, false, new_slot(handler, tag)));
    sift_up(keys_.size() - 1);
  }

  // Zero-delay lane: the caller guarantees time_ps is the current time.
  void push_now(int64_t time_ps, EventHandler* handler, uint64_t tag) {
    if (ring_size_ == ring_.size()) grow_ring();
    const Key key = make_key(time_ps, kDefaultPriority, false, new_slot(handler, tag));
    ring_[(ring_head_ + ring_size_) & (ring_.size() - 1)] = key;
    ++ring_size_;
  }

  // Schedules a timer, or moves it if it is already pending.
  void schedule(Timer& timer, int64_t time_ps, uint8_t priority) {
    timer.time_ps_ = time_ps;
    if (timer.pending()) {
      const size_t i = timer.index_;
      const Key key = make_key(time_ps, priority, true, slot_of(keys_[i]));
      const bool earlier = key < keys_[i];
      keys_[i] = key;
      if (earlier)
        sift_up(i);
      else
        sift_down(i);
    } else {
      keys_.push_back(
          make_key(time_ps, priority, true, new_slot(nullptr, reinterpret_cast<uint64_t>(&timer))));
      sift_up(keys_.size() - 1);
    }
  }

  void cancel(Timer& timer) {
    if (!timer.pending()) return;
    const size_t i = timer.index_;
    timer.index_ = Timer::kIdle;
    free_slots_.push_back(slot_of(keys_[i]));
    const Key last = keys_.back();
    keys_.pop_back();
    if (i == keys_.size()) return;
    const bool earlier = last < keys_[i];
    place(i, last);
    if (earlier)
      sift_up(i);
    else
      sift_down(i);
  }

  [[nodiscard]] int64_t next_time_ps() const {
    assert(!empty());
    return time_of(take_ring() ? ring_[ring_head_] : keys_.front());
  }

  FiredEvent pop() {
    assert(!empty());
    Key key;
    if (take_ring()) {
      key = ring_[ring_head_];
      ring_head_ = (ring_head_ + 1) & (ring_.size() - 1);
      --ring_size_;
    } else {
      key = keys_.front();
      remove_top();
      // The payload of the next event to fire was written long ago: fetch it now, while
      // this event's handler runs.
      if (!keys_.empty()) __builtin_prefetch(&slots_[slot_of(keys_.front())]);
    }
    const uint32_t slot = slot_of(key);
    free_slots_.push_back(slot);
    const Payload& p = slots_[slot];
    if (key & kTimerBit) {
      auto* timer = reinterpret_cast<Timer*>(p.tag);
      timer->index_ = Timer::kIdle;
      return FiredEvent{time_of(key), timer->handler_, timer->tag_};
    }
    return FiredEvent{time_of(key), p.handler, p.tag};
  }

  void clear() {
    for (const Key k : keys_) {
      if (k & kTimerBit) reinterpret_cast<Timer*>(slots_[slot_of(k)].tag)->index_ = Timer::kIdle;
    }
    keys_.clear();
    slots_.clear();
    free_slots_.clear();
    ring_size_ = 0;
    ring_head_ = 0;
  }

  // Test hook: start the sequence near its wrap-around.
  void set_sequence_for_test(uint64_t sequence) { sequence_ = sequence; }

 private:
  __extension__ using Key = unsigned __int128;
  struct Payload {
    EventHandler* handler;  // unused for timers
    uint64_t tag;           // the Timer* for timers
  };
  static constexpr uint64_t kSequenceLimit = uint64_t{1} << 32;
  static constexpr Key kTimerBit = Key{1} << 23;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << 23) - 1;

  Key make_key(int64_t time_ps, uint8_t priority, bool timer, uint32_t slot) {
    if (sequence_ == kSequenceLimit) renumber();
    const uint64_t low = (static_cast<uint64_t>(priority) << 56) | (sequence_++ << 24) |
                         (timer ? uint64_t{1} << 23 : 0) | slot;
    return (static_cast<Key>(static_cast<uint64_t>(time_ps) ^ (uint64_t{1} << 63)) << 64) | low;
  }
  static int64_t time_of(Key k) {
    return static_cast<int64_t>(static_cast<uint64_t>(k >> 64) ^ (uint64_t{1} << 63));
  }
  static uint32_t slot_of(Key k) { return static_cast<uint32_t>(static_cast<uint64_t>(k) & kSlotMask); }

  uint32_t new_slot(EventHandler* handler, uint64_t tag) {
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      if (slots_.size() >= kMaxPending) throw std::length_error("more than 2^23 pending events");
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[slot] = Payload{handler, tag};
    return slot;
  }

  // Gives the pending events sequences 0..n-1 in their current order (heap and ring merged;
  // both sorted first), so new events still follow every pending one.
  void renumber() {
    std::vector<Key> ring_keys(ring_size_);
    for (size_t k = 0; k < ring_size_; ++k) ring_keys[k] = ring_[(ring_head_ + k) & (ring_.size() - 1)];
    std::sort(keys_.begin(), keys_.end());  // a sorted array is a valid heap
    constexpr uint64_t kSeqField = ((uint64_t{1} << 32) - 1) << 24;
    uint64_t next = 0;
    size_t h = 0, r = 0;
    auto renamed = [&](Key k) { return (k & ~Key{kSeqField}) | (Key{next++} << 24); };
    while (h < keys_.size() || r < ring_keys.size()) {
      if (r == ring_keys.size() || (h < keys_.size() && keys_[h] < ring_keys[r])) {
        keys_[h] = renamed(keys_[h]);
        place(h, keys_[h]);
        ++h;
      } else {
        ring_keys[r] = renamed(ring_keys[r]);
        ++r;
      }
    }
    for (size_t k = 0; k < ring_size_; ++k) ring_[(ring_head_ + k) & (ring_.size() - 1)] = ring_keys[k];
    sequence_ = next;
  }

  [[nodiscard]] bool take_ring() const {
    if (ring_size_ == 0) return false;
    if (keys_.empty()) return true;
    return !(keys_.front() < ring_[ring_head_]);
  }

  void place(size_t i, Key key) {
    keys_[i] = key;
    if (key & kTimerBit)
      reinterpret_cast<Timer*>(slots_[slot_of(key)].tag)->index_ = static_cast<uint32_t>(i);
  }

  // Branch-free selection of the smallest of up to Arity siblings (random keys make the
  // branchy version mispredict about once per level).
  size_t min_child(size_t first, size_t end) const {
    size_t best = first;
    Key best_key = keys_[first];
    for (size_t c = first + 1; c < end; ++c) {
      const Key k = keys_[c];
      const bool smaller = k < best_key;
      best = smaller ? c : best;
      best_key = smaller ? k : best_key;
    }
    return best;
  }

  // Floyd's bottom-up deletion: walk the hole from the root to a leaf along smallest
  // children (no comparison with the moving element), then sift the last element up from
  // there; it usually belongs near the bottom, so this saves a comparison per level.
  void remove_top() {
    const Key last = keys_.back();
    keys_.pop_back();
    const size_t n = keys_.size();
    if (n == 0) return;
    size_t hole = 0;
    while (true) {
      const size_t first = hole * Arity + 1;
      if (first >= n) break;
      // The next level's candidates are the grandchildren block, contiguous in memory:
      // fetch it while this level is compared.
      const size_t grand = first * Arity + 1;
      if (grand < n) {
        const char* block = reinterpret_cast<const char*>(keys_.begin() + grand);
        for (size_t off = 0; off < Arity * Arity * sizeof(Key); off += 64) __builtin_prefetch(block + off);
      }
      const size_t best = min_child(first, first + Arity < n ? first + Arity : n);
      place(hole, keys_[best]);
      hole = best;
    }
    keys_[hole] = last;
    sift_up(hole);
  }

  void sift_up(size_t i) {
    const Key key = keys_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / Arity;
      if (!(key < keys_[parent])) break;
      place(i, keys_[parent]);
      i = parent;
    }
    place(i, key);
  }

  void sift_down(size_t i) {
    const Key key = keys_[i];
    const size_t n = keys_.size();
    while (true) {
      const size_t first = i * Arity + 1;
      if (first >= n) break;
      const size_t best = min_child(first, first + Arity < n ? first + Arity : n);
      if (!(keys_[best] < key)) break;
      place(i, keys_[best]);
      i = best;
    }
    place(i, key);
  }

  void grow_ring() {
    std::vector<Key> bigger(ring_.empty() ? 64 : ring_.size() * 2);
    for (size_t k = 0; k < ring_size_; ++k) bigger[k] = ring_[(ring_head_ + k) & (ring_.size() - 1)];
    ring_ = std::move(bigger);
    ring_head_ = 0;
  }

  // The heap, stored after Arity - 1 pad slots: the children d*i+1 .. d*i+d of node i then
  // start at physical index d*(i+1), a cache-line boundary for d = 4 and 16-byte keys.
  class PaddedKeys {
   public:
    PaddedKeys() : v_(Arity - 1) {}
    Key& operator[](size_t i) { return v_[i + Arity - 1]; }
    const Key& operator[](size_t i) const { return v_[i + Arity - 1]; }
    [[nodiscard]] size_t size() const { return v_.size() - (Arity - 1); }
    [[nodiscard]] bool empty() const { return size() == 0; }
    void push_back(Key k) { v_.push_back(k); }
    void pop_back() { v_.pop_back(); }
    [[nodiscard]] Key back() const { return v_.back(); }
    [[nodiscard]] Key front() const { return (*this)[0]; }
    void clear() { v_.resize(Arity - 1); }
    Key* begin() { return v_.data() + Arity - 1; }
    Key* end() { return v_.data() + v_.size(); }
    [[nodiscard]] const Key* begin() const { return v_.data() + Arity - 1; }
    [[nodiscard]] const Key* end() const { return v_.data() + v_.size(); }

   private:
    std::vector<Key, CacheLineAllocator<Key>> v_;
  };
  PaddedKeys keys_;
  std::vector<Payload> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Key> ring_;
  size_t ring_head_ = 0;
  size_t ring_size_ = 0;
  uint64_t sequence_ = 0;
};

using EventQueue = BasicEventQueue<4>;

}  // namespace ct::sim

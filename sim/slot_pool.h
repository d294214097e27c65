// A pool of values addressed by 32-bit slots, reused last-freed-first: components keep
// per-transfer state in it and hand the slot to the event queue as the event's tag, so no
// allocation happens per event once the pool has grown to the peak in-flight count.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ct::sim {

template <typename T>
class SlotPool {
 public:
  uint32_t acquire(T value) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      values_[slot] = std::move(value);
    } else {
      slot = static_cast<uint32_t>(values_.size());
      values_.push_back(std::move(value));
    }
    return slot;
  }
  // Returns the value and frees its slot.
  T release(uint32_t slot) {
    free_.push_back(slot);
    return std::move(values_[slot]);
  }
  T& operator[](uint32_t slot) { return values_[slot]; }
  [[nodiscard]] size_t in_use() const { return values_.size() - free_.size(); }

 private:
  std::vector<T> values_;
  std::vector<uint32_t> free_;
};

}  // namespace ct::sim

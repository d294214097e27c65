// The fabric uses of collective chains, shared by the networks of many runs over one cluster
// (a layout sweep: scenario/layouts.h builds the cluster once and evaluates every layout
// against it). A chain's uses depend only on its legs and the cluster's routes (each leg on
// its connection's path, network.h chain_leg_flow), not on the run, so a chain that one
// layout routed is not routed again by the next one (found by the legs themselves: the plans
// of two layouts differ in bytes and chain ids where their rings are the same). Valid while the routes
// are those of `routing_epoch`; a network whose cluster's routes changed does not use it.
// Thread-safe; what a run computes does not depend on which run stored an entry first.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/network.h"
#include "models/network/path_uses.h"

namespace ct::network {

class ChainCache {
 public:
  using Uses = std::vector<PathUses::Use>;
  explicit ChainCache(uint64_t routing_epoch) : epoch_(routing_epoch) {}

  [[nodiscard]] uint64_t routing_epoch() const { return epoch_; }
  [[nodiscard]] std::shared_ptr<const Uses> find(std::span<const Leg> legs) const {
    const std::shared_lock lock(mutex_);
    const auto it = map_.find(legs_hash(legs));
    if (it == map_.end()) return nullptr;
    for (const Entry& e : it->second)
      if (same_legs(e.legs, legs)) return e.uses;
    return nullptr;
  }
  // Stores the uses of a chain's legs (the first stored for the same legs stays) and returns
  // the stored ones.
  std::shared_ptr<const Uses> put(std::span<const Leg> legs, std::shared_ptr<const Uses> uses) {
    const std::unique_lock lock(mutex_);
    std::vector<Entry>& bucket = map_[legs_hash(legs)];
    for (const Entry& e : bucket)
      if (same_legs(e.legs, legs)) return e.uses;
    bucket.push_back(Entry{std::vector<Leg>(legs.begin(), legs.end()), std::move(uses)});
    return bucket.back().uses;
  }

 private:
  struct Entry {
    std::vector<Leg> legs;
    std::shared_ptr<const Uses> uses;
  };
  uint64_t epoch_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::vector<Entry>> map_;
};

}  // namespace ct::network

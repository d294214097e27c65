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
#include <optional>
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

  // The same uses by the chain id of a collective plan (collective.h Plan::chain_id: unique in
  // the process, and a plan's legs never change), shared plans being reused by many runs: found
  // without hashing and comparing the legs again.
  [[nodiscard]] std::shared_ptr<const Uses> find_id(uint64_t chain_id) const {
    const std::shared_lock lock(mutex_);
    const auto it = by_id_.find(chain_id);
    return it == by_id_.end() ? nullptr : it->second;
  }
  void put_id(uint64_t chain_id, std::shared_ptr<const Uses> uses) {
    const std::unique_lock lock(mutex_);
    by_id_.emplace(chain_id, std::move(uses));
  }

  // Path latencies (Network::path_latency) by GPU pair, shared the same way: a ring's every leg
  // asks for one when the ring is laid out (collective/ring.h), and rings of other layouts
  // cross the same pairs. Bounded: past kMaxLatencies pairs nothing more is kept.
  [[nodiscard]] std::optional<sim::Duration> find_latency(int src_gpu, int dst_gpu) const {
    const std::shared_lock lock(latency_mutex_);
    const auto it = latency_.find(pair_key(src_gpu, dst_gpu));
    if (it == latency_.end()) return std::nullopt;
    return it->second;
  }
  void put_latency(int src_gpu, int dst_gpu, sim::Duration latency) {
    const std::unique_lock lock(latency_mutex_);
    if (latency_.size() < kMaxLatencies) latency_.emplace(pair_key(src_gpu, dst_gpu), latency);
  }

 private:
  struct Entry {
    std::vector<Leg> legs;
    std::shared_ptr<const Uses> uses;
  };
  static constexpr size_t kMaxLatencies = size_t{1} << 22;
  uint64_t epoch_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::vector<Entry>> map_;
  std::unordered_map<uint64_t, std::shared_ptr<const Uses>> by_id_;
  mutable std::shared_mutex latency_mutex_;
  std::unordered_map<uint64_t, sim::Duration> latency_;
};

}  // namespace ct::network

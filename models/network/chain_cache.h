// The fabric uses of collective chains, shared by the networks of many runs over one cluster
// (a layout sweep: scenario/layouts.h builds the cluster once and evaluates every layout
// against it). A chain's uses depend only on its legs and the cluster's routes (each leg on
// its connection's path, network.h chain_leg_flow), not on the run, so a chain that one
// layout routed is not routed again by the next one (found by the legs themselves: the plans
// of two layouts differ in bytes and chain ids where their rings are the same). Valid while the routes
// are those of `routing_epoch`; a network whose cluster's routes changed does not use it.
// Thread-safe; what a run computes does not depend on which run stored an entry first.
#pragma once

#include <atomic>
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

// A chain's uses, by resource in the order its legs first reach them, and its rate at the
// capacities it was built under when no capacity had changed yet (min over uses of C / a: what
// AnalyticalNetwork::bottleneck gives at capacity version 0; NaN when built after a change).
// Every network of a sweep shares the cluster's capacities, so none scans the uses again.
struct ChainUses {
  std::vector<PathUses::Use> uses;
  double base_bps = 0.0;
};

class ChainCache {
 public:
  using Uses = ChainUses;
  explicit ChainCache(uint64_t routing_epoch, int queue_pairs = 1)
      : epoch_(routing_epoch), qps_(queue_pairs) {}

  [[nodiscard]] uint64_t routing_epoch() const { return epoch_; }
  // The network.qps_per_connection its uses were routed with (a network with another does not
  // use it).
  [[nodiscard]] int queue_pairs() const { return qps_; }
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

  // A number no other cache of the process has had: what a thread's own table of path
  // latencies (AnalyticalNetwork::path_latency) is tagged with, so that it never outlives the
  // routes it was filled from. That table is the thread's, not shared: a ring's every leg asks
  // for a latency, and with one table under a reader-writer lock two threads of a batch spent
  // their time handing its cache line to each other and sleeping on its writers.
  [[nodiscard]] uint64_t serial() const { return serial_; }

 private:
  struct Entry {
    std::vector<Leg> legs;
    std::shared_ptr<const Uses> uses;
  };
  static uint64_t next_serial() {
    static std::atomic<uint64_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  uint64_t epoch_;
  int qps_ = 1;
  uint64_t serial_ = next_serial();
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::vector<Entry>> map_;
  std::unordered_map<uint64_t, std::shared_ptr<const Uses>> by_id_;
};

}  // namespace ct::network

// Collective plans shared by the engines of many runs over one cluster and one set of network
// and collective parameters (a layout sweep: scenario/layouts.h). A plan (the algorithm NCCL
// picks, the chain's legs, its latency and rate ceiling) depends only on the operation, the
// group, the bytes, the engine's parameters and the cluster's routes, so the data-parallel
// rings that one layout built are not built again by the next layout with the same groups.
// Valid while the routes are those of `routing_epoch`; an engine whose cluster's routes
// changed does not use it. Thread-safe; results do not depend on which run stored a plan
// first (the plans are equal; only their chain ids, names without meaning, differ).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/network.h"
#include "sim/units.h"

namespace ct::collective {

struct Plan;

class PlanCache {
 public:
  explicit PlanCache(uint64_t routing_epoch) : epoch_(routing_epoch) {}

  [[nodiscard]] uint64_t routing_epoch() const { return epoch_; }
  // `op` is the operation's code (collective.h Op), `params` a fingerprint of the engine's
  // parameters (the plans of different parameters never mix).
  [[nodiscard]] std::shared_ptr<const Plan> find(int op, int64_t bytes, uint64_t params,
                                                 std::span<const int> group) const {
    const std::shared_lock lock(mutex_);
    const auto it = map_.find(key(op, bytes, params, group));
    if (it == map_.end()) return nullptr;
    for (const Entry& e : it->second)
      if (e.is(op, bytes, params, group)) return e.plan;
    return nullptr;
  }
  // A ring's legs over a group (ring.h ring_legs: which depends only on the sorted ranks and
  // the channels) and its mean hop latency: the plans of different byte counts share it.
  struct Ring {
    std::vector<network::Leg> legs;
    sim::Duration hop_latency;
  };
  [[nodiscard]] std::shared_ptr<const Ring> find_ring(int channels, std::span<const int> ranks) const {
    const std::shared_lock lock(mutex_);
    const auto it = rings_.find(key(-1, channels, 0, ranks));
    if (it == rings_.end()) return nullptr;
    for (const RingEntry& e : it->second)
      if (e.is(channels, ranks)) return e.ring;
    return nullptr;
  }
  std::shared_ptr<const Ring> put_ring(int channels, std::span<const int> ranks,
                                       std::shared_ptr<const Ring> ring) {
    const std::unique_lock lock(mutex_);
    std::vector<RingEntry>& bucket = rings_[key(-1, channels, 0, ranks)];
    for (const RingEntry& e : bucket)
      if (e.is(channels, ranks)) return e.ring;
    bucket.push_back(RingEntry{channels, std::vector<int>(ranks.begin(), ranks.end()), std::move(ring)});
    return bucket.back().ring;
  }

  // Stores a plan (the first stored for a key stays) and returns the stored one.
  std::shared_ptr<const Plan> put(int op, int64_t bytes, uint64_t params, std::span<const int> group,
                                  std::shared_ptr<const Plan> plan) {
    const std::unique_lock lock(mutex_);
    std::vector<Entry>& bucket = map_[key(op, bytes, params, group)];
    for (const Entry& e : bucket)
      if (e.is(op, bytes, params, group)) return e.plan;
    bucket.push_back(Entry{op, bytes, params, std::vector<int>(group.begin(), group.end()), std::move(plan)});
    return bucket.back().plan;
  }

 private:
  struct Entry {
    int op;
    int64_t bytes;
    uint64_t params;
    std::vector<int> group;
    std::shared_ptr<const Plan> plan;
    [[nodiscard]] bool is(int o, int64_t b, uint64_t p, std::span<const int> g) const {
      return op == o && bytes == b && params == p &&
             std::equal(group.begin(), group.end(), g.begin(), g.end());
    }
  };
  struct RingEntry {
    int channels;
    std::vector<int> ranks;
    std::shared_ptr<const Ring> ring;
    [[nodiscard]] bool is(int c, std::span<const int> r) const {
      return channels == c && std::equal(ranks.begin(), ranks.end(), r.begin(), r.end());
    }
  };
  static uint64_t key(int op, int64_t bytes, uint64_t params, std::span<const int> group) {
    return network::ranks_hash(group, (static_cast<uint64_t>(op) + 1) * 0x9E3779B97F4A7C15ULL ^
                                          static_cast<uint64_t>(bytes) ^ (params * 0xC2B2AE3D27D4EB4FULL));
  }
  uint64_t epoch_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, std::vector<Entry>> map_;
  std::unordered_map<uint64_t, std::vector<RingEntry>> rings_;
};

}  // namespace ct::collective

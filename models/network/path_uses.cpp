#include "models/network/path_uses.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/network/network.h"
#include "models/topology/hash.h"

namespace ct::network {

PathUses::PathUses(const Cluster& cluster) : cluster_(cluster) {}

namespace {
// Per-resource slot arrays (every entry -1) of destroyed PathUses, for the next ones on this
// thread: a layout sweep builds several per layout over one cluster, and filling an array of
// 1e5 entries and more each time cost as much as the layout's routing.
constexpr size_t kPooledSlots = size_t{1} << 24;  // entries kept at most, per thread
std::vector<std::vector<int32_t>>& slot_pool() {
  thread_local std::vector<std::vector<int32_t>> pool;
  return pool;
}
}  // namespace

PathUses::~PathUses() {
  if (slot_.empty()) return;
  clear();  // every entry -1 again
  auto& pool = slot_pool();
  size_t kept = slot_.size();
  for (const auto& s : pool) kept += s.size();
  if (kept <= kPooledSlots) pool.push_back(std::move(slot_));
}

void PathUses::ensure_slots() {
  if (!slot_.empty()) return;
  const auto n = static_cast<size_t>(cluster_.resource_count());
  auto& pool = slot_pool();
  for (auto it = pool.begin(); it != pool.end(); ++it) {
    if (it->size() == n) {
      slot_ = std::move(*it);
      pool.erase(it);
      return;
    }
  }
  slot_.assign(n, -1);
}

void PathUses::clear() {
  for (const Use& u : uses_) slot_[u.resource] = -1;
  uses_.clear();
  max_latency_ = sim::Duration::zero();
}

void PathUses::assign(std::span<const Use> uses) {
  clear();
  ensure_slots();
  uses_.assign(uses.begin(), uses.end());
  for (size_t i = 0; i < uses_.size(); ++i) slot_[uses_[i].resource] = static_cast<int32_t>(i);
}

void PathUses::add_path(double coefficient) {
  ensure_slots();  // on first use
  for (const int32_t r : path_) {
    if (filter_ != nullptr && filter_[r] == 0) continue;
    if (slot_[r] < 0) {
      slot_[r] = static_cast<int32_t>(uses_.size());
      uses_.push_back(Use{r, coefficient});
    } else {
      uses_[static_cast<size_t>(slot_[r])].coefficient += coefficient;
    }
  }
}

sim::Duration PathUses::add(int src_gpu, int dst_gpu, uint64_t flow_id) {
  const uint64_t epoch = cluster_.topology().routing_epoch();
  if (epoch != fixed_epoch_) {
    fixed_.clear();
    fixed_store_.clear();
    flow_paths_.clear();
    flow_store_.clear();
    fixed_epoch_ = epoch;
  }
  const sim::Duration latency = add_connection(src_gpu, dst_gpu, flow_id);
  if (rail_fold_ > 1 && cluster_.fabric_ports(src_gpu, dst_gpu) > 0) {
    const sim::Duration own = max_latency_;
    filter_ = rail_shared_->data();
    for (int k = 1; k < rail_fold_; ++k) add_connection(src_gpu + k, dst_gpu + k, flow_id);
    filter_ = nullptr;
    max_latency_ = own;
  }
  return latency;
}

sim::Duration PathUses::add_once(int src_gpu, int dst_gpu, uint64_t flow_id) {
  // One queue pair, no siblings and one port: add_routed's path, without its tables.
  if (qps_ > 1 || rail_fold_ > 1 || cluster_.fabric_ports(src_gpu, dst_gpu) > 1)
    return add(src_gpu, dst_gpu, flow_id);
  const sim::Duration latency = cluster_.path(src_gpu, dst_gpu, flow_id, path_);
  add_path(1.0);
  if (latency > max_latency_) max_latency_ = latency;
  return latency;
}

void PathUses::set_rail_fold(int fold, std::shared_ptr<const std::vector<uint8_t>> shared_links) {
  if (fold > 1 &&
      (shared_links == nullptr || shared_links->size() != static_cast<size_t>(cluster_.resource_count()))) {
    throw std::logic_error("PathUses::set_rail_fold: one flag per resource expected");
  }
  rail_fold_ = std::max(1, fold);
  rail_shared_ = rail_fold_ > 1 ? std::move(shared_links) : nullptr;
}

sim::Duration PathUses::add_connection(int src_gpu, int dst_gpu, uint64_t flow_id) {
  const uint64_t key = pair_key(src_gpu, dst_gpu);
  if (qps_ <= 1) return add_routed(src_gpu, dst_gpu, key, flow_id, 1.0);
  // Several queue pairs: a pair with one path takes it whole, once.
  if (const auto it = fixed_.find(key); it != fixed_.end() && it->second.unique)
    return add_fixed(it->second, 1.0);
  sim::Duration latency = sim::Duration::zero();
  const double share = 1.0 / qps_;
  for (int k = 0; k < qps_; ++k) {
    latency = std::max(latency, add_routed(src_gpu, dst_gpu, key, queue_pair_flow(flow_id, k), share));
  }
  return latency;
}

void PathUses::set_queue_pairs(int q) {
  if (q < 1) {
    throw std::invalid_argument("network.qps_per_connection: got " + std::to_string(q) + ", expected >= 1");
  }
  qps_ = q;
}

sim::Duration PathUses::add_stored(const std::vector<int32_t>& store, uint32_t begin, uint32_t size,
                                   sim::Duration latency, double share) {
  path_.assign(store.begin() + begin, store.begin() + begin + size);
  add_path(share);
  if (latency > max_latency_) max_latency_ = latency;
  return latency;
}

sim::Duration PathUses::add_fixed(const Fixed& f, double share) {
  return add_stored(fixed_store_, f.begin, f.size, f.latency, share);
}

uint64_t queue_pair_flow(uint64_t flow_id, int k) {
  return k == 0 ? flow_id
                : topology::detail::splitmix64(flow_id ^ (0x5150ULL << 48) ^ static_cast<uint64_t>(k));
}

sim::Duration PathUses::add_routed(int src_gpu, int dst_gpu, uint64_t key, uint64_t flow_id, double share) {
  const auto it = fixed_.find(key);
  if (it != fixed_.end() && it->second.unique) return add_fixed(it->second, share);  // single-port pairs only
  // A flow-dependent single-port pair: this flow's path, if it was routed before.
  const uint64_t flow_key = connection_key(key, flow_id);
  if (it != fixed_.end()) {
    const auto f = flow_paths_.find(flow_key);
    if (f != flow_paths_.end() && f->second.pair == key && f->second.flow == flow_id) {
      const FlowPath& p = f->second;
      return add_stored(flow_store_, p.begin, p.size, p.latency, share);
    }
  }
  const int ports = cluster_.fabric_ports(src_gpu, dst_gpu);
  sim::Duration latency = sim::Duration::zero();
  if (ports <= 1) {
    bool unique = false;
    latency = cluster_.path(src_gpu, dst_gpu, flow_id, path_, -1, &unique);
    if (it == fixed_.end()) {
      Fixed f{unique, static_cast<uint32_t>(fixed_store_.size()), 0, latency};
      if (unique) {
        fixed_store_.insert(fixed_store_.end(), path_.begin(), path_.end());
        f.size = static_cast<uint32_t>(path_.size());
      }
      fixed_.emplace(key, f);
    }
    if (!unique && flow_paths_.size() < kMaxFlowPaths &&
        flow_paths_
            .try_emplace(flow_key, FlowPath{key, flow_id, static_cast<uint32_t>(flow_store_.size()),
                                            static_cast<uint32_t>(path_.size()), latency})
            .second) {
      flow_store_.insert(flow_store_.end(), path_.begin(), path_.end());
    }
    add_path(share);
  } else {
    // Every port with a usable path carries an equal share (coefficient 1 / usable ports):
    // route each port once, then add the paths found.
    port_paths_.resize(static_cast<size_t>(ports));
    int usable = 0;
    for (int k = 0; k < ports; ++k) {
      try {
        latency = std::max(
            latency, cluster_.path(src_gpu, dst_gpu, flow_id, port_paths_[static_cast<size_t>(usable)], k));
        ++usable;
      } catch (const topology::NoRouteError&) {
      }
    }
    if (usable == 0) (void)cluster_.path(src_gpu, dst_gpu, flow_id, path_);  // throws, naming the NICs
    for (int k = 0; k < usable; ++k) {
      path_.swap(port_paths_[static_cast<size_t>(k)]);
      add_path(share / usable);
      path_.swap(port_paths_[static_cast<size_t>(k)]);
    }
  }
  if (latency > max_latency_) max_latency_ = latency;
  return latency;
}

double PathUses::leg_bps(int src_gpu, int dst_gpu, std::span<const double> capacity_bps) {
  clear();
  add(src_gpu, dst_gpu, 0);
  const double bps = bottleneck_bps(capacity_bps);
  clear();
  return bps;
}

double PathUses::bottleneck_bps(std::span<const double> capacity_bps) const {
  double best = std::numeric_limits<double>::infinity();
  for (const Use& u : uses_) {
    const double share = capacity_bps[static_cast<size_t>(u.resource)] / u.coefficient;
    if (share < best) best = share;
  }
  return best;
}

sim::Duration serialization(double bits, double bps) {
  if (bits <= 0.0) return sim::Duration::zero();
  if (!(bps > 0.0)) return sim::Duration::max();
  const double ps = std::ceil(bits / bps * 1e12);
  if (ps >= 9.2e18) return sim::Duration::max();
  return sim::Duration::ps(static_cast<int64_t>(ps));
}

}  // namespace ct::network

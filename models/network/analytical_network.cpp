#include "models/network/analytical_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/network/chain_cache.h"
#include "models/topology/hash.h"

namespace ct::network {

void validate(const NetworkParams& params) {
  if (!(params.protocol_efficiency > 0.0 && params.protocol_efficiency <= 1.0)) {
    throw std::invalid_argument("network.protocol_efficiency: got " +
                                std::to_string(params.protocol_efficiency) + ", expected (0, 1]");
  }
  if (params.qps_per_connection < 1) {
    throw std::invalid_argument("network.qps_per_connection: got " +
                                std::to_string(params.qps_per_connection) + ", expected >= 1");
  }
}

std::vector<double> resource_capacities(const Cluster& cluster) {
  std::vector<double> c(static_cast<size_t>(cluster.resource_count()));
  for (int32_t r = 0; r < cluster.resource_count(); ++r)
    c[static_cast<size_t>(r)] = cluster.resource_capacity_bps(r);
  return c;
}

std::shared_ptr<const std::vector<double>> capacities_for(const Cluster& cluster,
                                                          const NetworkParams& params) {
  if (params.shared_capacities == nullptr)
    return std::make_shared<const std::vector<double>>(resource_capacities(cluster));
  if (params.shared_capacities->size() != static_cast<size_t>(cluster.resource_count()))
    throw std::logic_error("network: shared capacities of another cluster");
  return params.shared_capacities;
}

AnalyticalNetwork::AnalyticalNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params)
    : sim_(sim),
      cluster_(cluster),
      params_(params),
      stats_(cluster, capacities_for(cluster, params)),
      uses_(cluster),
      bandwidth_uses_(cluster),
      chain_scratch_(cluster) {
  validate(params_);
  for (PathUses* u : {&uses_, &bandwidth_uses_, &chain_scratch_})
    u->set_queue_pairs(params_.qps_per_connection);
}

void AnalyticalNetwork::finish(double wire_bits, sim::Duration delay, DeliveryHandler& handler,
                               uint64_t tag) {
  if (params_.link_statistics) {
    for (const PathUses::Use& u : uses_.uses()) stats_.add_work(u.resource, u.coefficient * wire_bits);
  }
  if (delay == sim::Duration::max()) return;  // a zero-capacity path: never delivered
  const uint32_t slot = pending_.acquire(Pending{&handler, tag});
  sim_.schedule_in(delay, *this, slot);
}

AnalyticalNetwork::FlowRoute AnalyticalNetwork::route_flow(int src_gpu, int dst_gpu, uint64_t flow_id) {
  uses_.clear();
  const sim::Duration latency = uses_.add(src_gpu, dst_gpu, flow_id);
  return FlowRoute{src_gpu,
                   dst_gpu,
                   flow_id,
                   cluster_.topology().routing_epoch(),
                   capacity_version_,
                   latency,
                   uses_.bottleneck_bps(stats_.capacities())};
}

void AnalyticalNetwork::send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes,
                                  DeliveryHandler& handler, uint64_t tag) {
  FlowRoute route;
  if (params_.link_statistics) {
    route = route_flow(src_gpu, dst_gpu, flow_id);  // its uses_ are what finish() counts
  } else {
    if (flow_routes_.empty()) flow_routes_.resize(kFlowRouteSlots);
    const uint64_t h = connection_key(pair_key(src_gpu, dst_gpu), flow_id);
    FlowRoute& f = flow_routes_[h & (kFlowRouteSlots - 1)];
    if (!(f.src == src_gpu && f.dst == dst_gpu && f.flow == flow_id &&
          f.epoch == cluster_.topology().routing_epoch() && f.version == capacity_version_)) {
      f = route_flow(src_gpu, dst_gpu, flow_id);
    }
    route = f;
  }
  const double bits = 8.0 * bytes.as_double() / params_.protocol_efficiency;
  const sim::Duration wire = std::isinf(route.rate) ? sim::Duration::zero() : serialization(bits, route.rate);
  finish(bits, wire == sim::Duration::max() ? wire : route.latency + wire, handler, tag);
}

void AnalyticalNetwork::forget_chains_if_stale() {
  const uint64_t epoch = cluster_.topology().routing_epoch();
  if (epoch != chains_epoch_) {  // routes changed
    chains_.clear();
    named_chains_.clear();
    chains_epoch_ = epoch;
  }
  if (chains_.size() > 4096) chains_.clear();  // bounded memory
  if (named_chains_.size() > 4096) named_chains_.clear();
}

AnalyticalNetwork::Chain AnalyticalNetwork::build_chain(std::span<const Leg> legs) {
  Chain c;
  c.fixed = true;
  chain_scratch_.clear();
  for (size_t i = 0; i < legs.size(); ++i) {
    const Leg& l = legs[i];
    if (cluster_.fabric_ports(l.src_gpu, l.dst_gpu) > 1) {
      c.fixed = false;
      break;
    }
    chain_scratch_.add_once(l.src_gpu, l.dst_gpu, chain_leg_flow(i));
  }
  if (c.fixed) {
    auto uses = std::make_shared<ChainUses>();
    uses->uses.assign(chain_scratch_.uses().begin(), chain_scratch_.uses().end());
    uses->base_bps = capacity_version_ == 0 ? min_rate(uses->uses) : std::numeric_limits<double>::quiet_NaN();
    c.uses = std::move(uses);
  }
  chain_scratch_.clear();
  return c;
}

AnalyticalNetwork::Chain& AnalyticalNetwork::chain(std::span<const Leg> legs) {
  forget_chains_if_stale();
  uint64_t key = legs_hash(legs);
  // Open addressing on the hash: a different chain under the same key moves to the next one.
  for (;; ++key) {
    const auto it = chains_.find(key);
    if (it == chains_.end()) break;
    if (same_legs(legs, it->second.legs)) return it->second;
  }
  Chain& c = chains_.emplace(key, build_chain(legs)).first->second;
  c.legs.assign(legs.begin(), legs.end());
  return c;
}

// The sweep's shared cache while the cluster's routes are those it was built for; else none.
ChainCache* AnalyticalNetwork::shared_chains() const {
  ChainCache* shared = params_.shared_chains;
  return shared != nullptr && shared->routing_epoch() == cluster_.topology().routing_epoch() &&
                 shared->queue_pairs() == params_.qps_per_connection
             ? shared
             : nullptr;
}

AnalyticalNetwork::Chain& AnalyticalNetwork::named_chain(uint64_t id, std::span<const Leg> legs) {
  forget_chains_if_stale();
  const auto it = named_chains_.find(id);
  if (it != named_chains_.end()) return it->second;
  ChainCache* shared = shared_chains();
  if (shared != nullptr) {
    std::shared_ptr<const ChainCache::Uses> uses = shared->find_id(id);
    if (uses == nullptr) {
      uses = shared->find(legs);
      if (uses != nullptr) shared->put_id(id, uses);
    }
    if (uses != nullptr) {
      Chain c;
      c.fixed = true;
      c.uses = std::move(uses);
      return named_chains_.emplace(id, std::move(c)).first->second;
    }
  }
  Chain c = build_chain(legs);
  if (shared != nullptr && c.fixed) {
    c.uses = shared->put(legs, c.uses);
    shared->put_id(id, c.uses);
  }
  return named_chains_.emplace(id, std::move(c)).first->second;
}

void AnalyticalNetwork::send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                                       sim::Duration fixed_latency, double leg_rate_cap_bps,
                                       DeliveryHandler& handler, uint64_t tag) {
  send_chain(0, legs, bytes_per_leg, fixed_latency, leg_rate_cap_bps, handler, tag);
}

void AnalyticalNetwork::send_chain(uint64_t chain_id, std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                                   sim::Duration fixed_latency, double leg_rate_cap_bps,
                                   DeliveryHandler& handler, uint64_t tag) {
  Chain& c = chain_id != 0 ? named_chain(chain_id, legs) : chain(legs);
  send_over(c, legs, bytes_per_leg, fixed_latency, leg_rate_cap_bps, handler, tag);
}

double AnalyticalNetwork::min_rate(std::span<const PathUses::Use> uses) const {
  const std::vector<double>& capacity = stats_.capacities();
  double m = std::numeric_limits<double>::infinity();
  for (const PathUses::Use& u : uses)
    m = std::min(m, capacity[static_cast<size_t>(u.resource)] / u.coefficient);
  return m;
}

// The chain's common rate: the least C / a over its uses (a = legs on the resource), at the
// capacities of `fixed_min_version`. Every leg's path is fixed for the chain's life
// (chain_leg_flow), so it is computed once per capacity change.
double AnalyticalNetwork::bottleneck(Chain& c) {
  if (c.fixed_min_version != capacity_version_) {
    // The capacities a chain was built under are those of every run over the cluster until
    // one changes (capacity_version_ 0): its stored rate.
    c.fixed_min =
        capacity_version_ == 0 && !std::isnan(c.uses->base_bps) ? c.uses->base_bps : min_rate(c.uses->uses);
    c.fixed_min_version = capacity_version_;
  }
  return c.fixed_min;
}

void AnalyticalNetwork::send_over(Chain& c, std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                                  sim::Duration fixed_latency, double leg_rate_cap_bps,
                                  DeliveryHandler& handler, uint64_t tag) {
  double links = 0.0;
  if (c.fixed) {
    links = bottleneck(c);
    if (params_.link_statistics) uses_.assign(c.uses->uses);
  } else {
    uses_.clear();
    for (size_t i = 0; i < legs.size(); ++i) uses_.add(legs[i].src_gpu, legs[i].dst_gpu, chain_leg_flow(i));
    links = uses_.bottleneck_bps(stats_.capacities());
  }
  const double bits = 8.0 * bytes_per_leg.as_double() / params_.protocol_efficiency;
  const double rate = std::min(links, leg_rate_cap_bps);
  const sim::Duration wire = std::isinf(rate) ? sim::Duration::zero() : serialization(bits, rate);
  finish(bits, wire == sim::Duration::max() ? wire : fixed_latency + wire, handler, tag);
}

void AnalyticalNetwork::on_event(uint64_t slot) {
  const Pending p = pending_.release(static_cast<uint32_t>(slot));
  p.handler->on_delivered(p.tag);
}

sim::Duration AnalyticalNetwork::path_latency(int src_gpu, int dst_gpu) const {
  ChainCache* shared = shared_chains();
  if (shared == nullptr) return cluster_.path(src_gpu, dst_gpu, 0, path_);
  // The thread's own table for the shared cache's routes (chain_cache.h serial), direct-mapped
  // by the pair: a slot holding another pair is routed again (the same latency either way).
  struct Latency {
    uint64_t pair = 0;  // pair_key + 1; 0: empty
    sim::Duration latency;
  };
  constexpr size_t kSlots = size_t{1} << 16;
  thread_local uint64_t serial = 0;
  thread_local std::vector<Latency> known;
  if (known.empty() || serial != shared->serial()) {
    known.assign(kSlots, Latency{});
    serial = shared->serial();
  }
  const uint64_t key = pair_key(src_gpu, dst_gpu) + 1;
  Latency& slot = known[topology::detail::splitmix64(key) & (kSlots - 1)];
  if (slot.pair == key) return slot.latency;
  slot = Latency{key, cluster_.path(src_gpu, dst_gpu, 0, path_)};
  return slot.latency;
}

sim::Bandwidth AnalyticalNetwork::path_bandwidth(int src_gpu, int dst_gpu) const {
  return sim::Bandwidth::bits_per_s(bandwidth_uses_.leg_bps(src_gpu, dst_gpu, stats_.capacities()));
}

void AnalyticalNetwork::set_resource_capacity(int32_t resource, sim::Bandwidth capacity) {
  stats_.set_capacity(resource, capacity.bps());
  ++capacity_version_;
}

LinkStats AnalyticalNetwork::link_stats(int32_t resource) const { return stats_.stats(resource, sim_.now()); }
std::vector<LinkStats> AnalyticalNetwork::top_links(size_t k) const { return stats_.top(k, sim_.now()); }
double AnalyticalNetwork::max_link_utilization() const { return stats_.max_utilization(sim_.now()); }

}  // namespace ct::network

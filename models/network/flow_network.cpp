#include "models/network/flow_network.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/network/analytical_network.h"

namespace ct::network {

FlowNetwork::FlowNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params)
    : sim_(sim),
      cluster_(cluster),
      params_(params),
      stats_(cluster, capacities_for(cluster, params)),
      uses_(cluster),
      bandwidth_uses_(cluster) {
  validate(params_);
  uses_.set_queue_pairs(params_.qps_per_connection);
  bandwidth_uses_.set_queue_pairs(params_.qps_per_connection);
  uses_.set_rail_fold(params_.rail_fold, params_.rail_shared_links);
  bandwidth_uses_.set_rail_fold(params_.rail_fold, params_.rail_shared_links);
  for (const double c : stats_.capacities()) solver_.add_resource(c);
}

// A path for one leg; a fabric that lost every path between the two NICs (link_down faults)
// fails the job as NCCL would: the queue pair errors out and the communicator aborts.
sim::Duration FlowNetwork::route(int src_gpu, int dst_gpu, uint64_t tag) {
  try {
    return uses_.add(src_gpu, dst_gpu, tag);
  } catch (const topology::NoRouteError& e) {
    throw NoPathError("link failure: at " + std::to_string(sim_.now().seconds()) + " s GPU " +
                          std::to_string(src_gpu) + " has no surviving path to GPU " +
                          std::to_string(dst_gpu) + " (" + e.what() +
                          "); its RDMA queue pair errors out and NCCL aborts the job",
                      sim_.now().seconds(), src_gpu, dst_gpu);
  }
}

void FlowNetwork::send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes,
                            DeliveryHandler& handler, uint64_t tag) {
  if (send_routes_.empty()) {
    size_t slots = kSendRouteSlots;
    while (slots < 4 * static_cast<size_t>(cluster_.gpu_count()) && slots < (size_t{1} << 18)) slots *= 2;
    send_routes_.resize(slots);
  }
  const uint64_t epoch = cluster_.topology().routing_epoch();
  const uint64_t h = connection_key(pair_key(src_gpu, dst_gpu), flow_id);
  SendRoute& r = send_routes_[h & (send_routes_.size() - 1)];
  if (!(r.src == src_gpu && r.dst == dst_gpu && r.flow == flow_id && r.epoch == epoch)) {
    uses_.clear();
    r.latency = route(src_gpu, dst_gpu, flow_id);
    r.uses.assign(uses_.uses().begin(), uses_.uses().end());
    r.src = src_gpu;
    r.dst = dst_gpu;
    r.flow = flow_id;
    r.epoch = epoch;
  }
  const Leg leg{src_gpu, dst_gpu};
  start(8.0 * bytes.as_double() / params_.protocol_efficiency, r.latency, handler, tag,
        std::span<const Leg>(&leg, 1), r.uses, false, flow_id);
}

void FlowNetwork::route_chain(std::span<const Leg> legs) {
  uses_.clear();
  for (size_t i = 0; i < legs.size(); ++i) route(legs[i].src_gpu, legs[i].dst_gpu, chain_leg_flow(i));
}

void FlowNetwork::send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                                 sim::Duration fixed_latency, double leg_rate_cap_bps,
                                 DeliveryHandler& handler, uint64_t tag) {
  route_chain(legs);
  start(8.0 * bytes_per_leg.as_double() / params_.protocol_efficiency, fixed_latency, handler, tag, legs,
        uses_.uses(), true, 0, leg_rate_cap_bps);
}

void FlowNetwork::send_chain(uint64_t chain_id, std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                             sim::Duration fixed_latency, double leg_rate_cap_bps, DeliveryHandler& handler,
                             uint64_t tag) {
  if (chain_id == 0) {
    send_pipelined(legs, bytes_per_leg, fixed_latency, leg_rate_cap_bps, handler, tag);
    return;
  }
  const uint64_t epoch = cluster_.topology().routing_epoch();
  if (epoch != chain_uses_epoch_ || chain_uses_.size() > 4096) {  // routes changed, or bounded memory
    chain_uses_.clear();
    chain_uses_epoch_ = epoch;
  }
  auto it = chain_uses_.find(chain_id);
  if (it == chain_uses_.end()) {
    route_chain(legs);
    it = chain_uses_.emplace(chain_id, std::vector<Use>(uses_.uses().begin(), uses_.uses().end())).first;
  }
  start(8.0 * bytes_per_leg.as_double() / params_.protocol_efficiency, fixed_latency, handler, tag, legs,
        it->second, true, 0, leg_rate_cap_bps);
}

void FlowNetwork::start(double bits, sim::Duration latency, DeliveryHandler& handler, uint64_t tag,
                        std::span<const Leg> legs, std::span<const Use> uses, bool chain, uint64_t flow_id,
                        double rate_cap_bps) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(transfers_.size());
    transfers_.emplace_back(static_cast<sim::EventHandler*>(this), slot);
  }
  Transfer& t = transfers_[slot];
  t.handler = &handler;
  t.tag = tag;
  t.latency = latency;
  t.remaining_bits = bits;
  t.bits = bits;
  t.attributed_bits = 0.0;
  ++counters_.started;
  counters_.started_bytes += bits / 8.0 * params_.protocol_efficiency;
  t.rate = 0.0;
  t.last_ps = sim_.now().ps();
  t.uses.assign(uses.begin(), uses.end());
  t.legs.assign(legs.begin(), legs.end());
  t.chain = chain;
  t.flow_id = flow_id;
  t.rate_cap_bps = rate_cap_bps;
  t.stalled = false;
  if (bits <= 0.0 || t.uses.empty()) {  // nothing to move: only the latency
    t.variable = -1;
    sim_.schedule(t.timer, sim_.now() + latency);
    return;
  }
  add_variable(t, slot);
}

void FlowNetwork::add_variable(Transfer& t, uint32_t slot) {
  t.variable = solver_.add_variable(
      std::isinf(t.rate_cap_bps) ? sim::MaxMinSolver::kUnbounded : t.rate_cap_bps, t.uses);
  if (transfer_of_variable_.size() <= static_cast<size_t>(t.variable)) {
    transfer_of_variable_.resize(static_cast<size_t>(t.variable) + 1, -1);
  }
  transfer_of_variable_[static_cast<size_t>(t.variable)] = static_cast<int32_t>(slot);
  request_solve();
}

void FlowNetwork::reroute_after_failure(sim::Duration retransmit_timeout) {
  const topology::Topology& topo = cluster_.topology();
  for (uint32_t slot = 0; slot < transfers_.size(); ++slot) {
    Transfer& t = transfers_[slot];
    if (t.variable < 0) continue;
    const bool dead = std::any_of(t.uses.begin(), t.uses.end(), [&](const Use& u) {
      return u.resource < cluster_.link_dir_count() && !topo.usable(u.resource);
    });
    if (!dead) continue;
    set_rate(t, 0.0);
    solver_.remove_variable(t.variable);
    transfer_of_variable_[static_cast<size_t>(t.variable)] = -1;
    t.variable = -1;
    t.stalled = true;
    ++counters_.cut;
    counters_.cut_bytes_left += t.remaining_bits / 8.0 * params_.protocol_efficiency;
    sim_.schedule(t.timer, sim_.now() + retransmit_timeout);
  }
  request_solve();
}

// The retransmission: the rest of the transfer on the paths the fabric has now.
void FlowNetwork::resume(Transfer& t, uint32_t slot) {
  t.stalled = false;
  ++counters_.resumed;
  uses_.clear();
  for (size_t i = 0; i < t.legs.size(); ++i)
    route(t.legs[i].src_gpu, t.legs[i].dst_gpu, t.chain ? chain_leg_flow(i) : t.flow_id);
  t.uses.assign(uses_.uses().begin(), uses_.uses().end());
  t.last_ps = sim_.now().ps();
  add_variable(t, slot);
}

void FlowNetwork::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  // Solves at least q apart, but never later than needed: a change at least q after the last
  // solve is solved at once (an isolated transfer starts on time), one within q of it waits for
  // last + q; a change at the very instant of the last solve is solved at that instant too.
  const int64_t q = params_.solve_quantum.count_ps();
  const int64_t now = sim_.now().ps();
  const bool wait = q > 0 && last_solve_ps_ >= 0 && now != last_solve_ps_;
  const int64_t at = wait ? std::max(now, last_solve_ps_ + q) : now;
  sim_.schedule_at(sim::Time::from_ps(at), *this, kSolveTag, kSolvePriority);
}

void FlowNetwork::set_rate(Transfer& t, double rate) {
  const int64_t now = sim_.now().ps();
  t.remaining_bits = std::max(0.0, t.remaining_bits - t.rate * static_cast<double>(now - t.last_ps) * 1e-12);
  t.last_ps = now;
  const bool was_moving = t.rate > 0.0, moving = rate > 0.0;
  if (was_moving && !moving) attribute(t);
  if (was_moving != moving && params_.link_statistics) {
    for (const Use& u : t.uses) {
      if (moving)
        stats_.flow_started(u.resource, sim_.now());
      else
        stats_.flow_stopped(u.resource, sim_.now());
    }
  }
  t.rate = rate;
}

double FlowNetwork::unattributed_bits(const Transfer& t) const {
  const double dt = static_cast<double>(sim_.now().ps() - t.last_ps) * 1e-12;
  const double remaining = std::max(0.0, t.remaining_bits - t.rate * dt);
  return std::max(0.0, t.bits - remaining - t.attributed_bits);
}

void FlowNetwork::attribute(Transfer& t) {
  if (!params_.link_statistics) return;
  const double bits = unattributed_bits(t);
  if (!(bits > 0.0)) return;
  for (const Use& u : t.uses) stats_.add_bits(u.resource, u.coefficient * bits);
  t.attributed_bits += bits;
}

std::vector<double> FlowNetwork::in_flight_bits() const {
  std::vector<double> out(stats_.capacities().size(), 0.0);
  for (const Transfer& t : transfers_) {
    if (t.variable < 0 || !(t.rate > 0.0)) continue;
    const double bits = unattributed_bits(t);
    for (const Use& u : t.uses) out[static_cast<size_t>(u.resource)] += u.coefficient * bits;
  }
  return out;
}

void FlowNetwork::solve_now() {
  if (!solver_.dirty()) return;
  ++solves_;
  changed_.clear();
  solver_.solve(changed_);
  for (const int32_t v : changed_) {
    const int32_t slot = transfer_of_variable_[static_cast<size_t>(v)];
    if (slot < 0) continue;
    Transfer& t = transfers_[static_cast<size_t>(slot)];
    set_rate(t, solver_.rate(v));
    const sim::Duration left = serialization(t.remaining_bits, t.rate);
    if (left == sim::Duration::max()) {
      sim_.cancel(t.timer);  // no capacity: stalled until a capacity change
    } else {
      sim_.schedule(t.timer, sim_.now() + left);
    }
  }
}

void FlowNetwork::bytes_done(Transfer& t) {
  set_rate(t, 0.0);
  solver_.remove_variable(t.variable);
  transfer_of_variable_[static_cast<size_t>(t.variable)] = -1;
  t.variable = -1;
  request_solve();
  sim_.schedule(t.timer, sim_.now() + t.latency);
}

void FlowNetwork::on_event(uint64_t tag) {
  if (tag == kSolveTag) {
    solve_pending_ = false;
    last_solve_ps_ = sim_.now().ps();
    solve_now();
    return;
  }
  Transfer& t = transfers_[tag];
  if (t.stalled) {
    resume(t, static_cast<uint32_t>(tag));
    return;
  }
  if (t.variable >= 0) {
    bytes_done(t);
    return;
  }
  DeliveryHandler* handler = t.handler;
  const uint64_t user_tag = t.tag;
  ++counters_.delivered;
  // What the rate integration moved (a few ulps of rounding left at most).
  counters_.delivered_bytes += (t.bits - std::max(0.0, t.remaining_bits)) / 8.0 * params_.protocol_efficiency;
  free_.push_back(static_cast<uint32_t>(tag));
  handler->on_delivered(user_tag);
}

sim::Duration FlowNetwork::path_latency(int src_gpu, int dst_gpu) const {
  return cluster_.path(src_gpu, dst_gpu, 0, path_);
}

sim::Bandwidth FlowNetwork::path_bandwidth(int src_gpu, int dst_gpu) const {
  return sim::Bandwidth::bits_per_s(bandwidth_uses_.leg_bps(src_gpu, dst_gpu, stats_.capacities()));
}

void FlowNetwork::set_resource_capacity(int32_t resource, sim::Bandwidth capacity) {
  // The bits moved so far crossed the link at its old capacity.
  for (const sim::MaxMinSolver::Incidence& inc : solver_.users(resource)) {
    const int32_t slot = transfer_of_variable_[static_cast<size_t>(inc.variable)];
    if (slot >= 0) attribute(transfers_[static_cast<size_t>(slot)]);
  }
  stats_.set_capacity(resource, capacity.bps());
  solver_.set_capacity(resource, capacity.bps());
  request_solve();
}

LinkStats FlowNetwork::link_stats(int32_t resource) const {
  double in_flight = 0.0;
  for (const sim::MaxMinSolver::Incidence& inc : solver_.users(resource)) {
    const int32_t slot = transfer_of_variable_[static_cast<size_t>(inc.variable)];
    if (slot >= 0) in_flight += inc.coefficient * unattributed_bits(transfers_[static_cast<size_t>(slot)]);
  }
  return stats_.stats(resource, sim_.now(), in_flight);
}
std::vector<LinkStats> FlowNetwork::top_links(size_t k) const {
  return stats_.top(k, sim_.now(), in_flight_bits());
}
double FlowNetwork::max_link_utilization() const {
  return stats_.max_utilization(sim_.now(), in_flight_bits());
}

}  // namespace ct::network

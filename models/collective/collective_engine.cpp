// Builds the chain of each collective (ring.h, tree.h; all_to_all below) and hands it to the
// network. all_to_all: every ordered pair (a, b), a != b, moves S/n; all pairs are legs of one
// chain (the op ends when its slowest pair ends; the shared rate puts each GPU's port under
// its n-1 legs), fixed latency = step_latency + the largest path latency. n (n-1) legs:
// fine for EP-sized groups (about a million legs at n = 1,024), not for 10K-rank groups.
// Automatic algorithm: NCCL's cost model (nccl_tuning.h) picks ring, tree, NVLS or NVLS tree
// for all_reduce, ring for all_gather / reduce_scatter / broadcast. NVLS is one leg per
// member carrying the whole buffer (the switch reduces and multicasts); NVLS tree uses the
// tree's legs across domains with NCCL's NVLS latency. Every chain's rate is capped at the
// algorithm's NCCL bandwidth (cap()).
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/collective/collective.h"
#include "models/collective/layout.h"
#include "models/collective/ring.h"
#include "models/collective/tree.h"
#include "models/network/analytical_network.h"
#include "models/topology/hash.h"

namespace ct::collective {
namespace {

sim::Bytes ceil_bytes(double b) { return sim::Bytes{static_cast<int64_t>(std::ceil(b))}; }

// The engine's algorithms and NCCL's (automatic maps to ring, the fallback NCCL also uses).
NcclAlgo to_nccl(Algorithm a) {
  switch (a) {
    case Algorithm::tree:
      return NcclAlgo::tree;
    case Algorithm::nvls:
      return NcclAlgo::nvls;
    case Algorithm::nvls_tree:
      return NcclAlgo::nvls_tree;
    case Algorithm::automatic:
    case Algorithm::ring:
      break;
  }
  return NcclAlgo::ring;
}

Algorithm from_nccl(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::tree:
      return Algorithm::tree;
    case NcclAlgo::nvls:
      return Algorithm::nvls;
    case NcclAlgo::nvls_tree:
      return Algorithm::nvls_tree;
    case NcclAlgo::ring:
      break;
  }
  return Algorithm::ring;
}

sim::Duration nccl_latency(const TuningInput& in, NcclAlgo algo, double bytes) {
  return sim::Duration::from_seconds(1e-6 * nccl_cost(in, algo, Protocol::simple, bytes).latency_us);
}

}  // namespace

CollectiveEngine::CollectiveEngine(sim::Simulation& sim, network::Network& net,
                                   const network::Cluster& cluster, CollectiveParams params)
    : sim_(sim),
      net_(net),
      cluster_(cluster),
      params_(params),
      channels_(params.channels > 0 ? params.channels : cluster.nics_per_domain()),
      uses_(cluster),
      capacity_(network::capacities_for(cluster, net.params())) {
  uses_.set_queue_pairs(net.params().qps_per_connection);
  uses_.set_rail_fold(net.params().rail_fold, net.params().rail_shared_links);
  if (params.channels < 0) {
    throw std::invalid_argument("collective.channels: got " + std::to_string(params.channels) +
                                ", expected >= 0 (0 = nics_per_node)");
  }
  if (params.ctas < 0) {
    throw std::invalid_argument("collective.ctas: got " + std::to_string(params.ctas) +
                                ", expected >= 0 (0 = NCCL's own count)");
  }
  if (params.step_latency < sim::Duration::zero()) {
    throw std::invalid_argument("collective.step_latency: must not be negative");
  }
  uint64_t f = 0x6A09E667F3BCC908ULL;
  const auto mix = [&f](uint64_t v) { f = (f ^ v) * 0x100000001B3ULL; };
  mix(static_cast<uint64_t>(channels_));
  mix(static_cast<uint64_t>(params.ctas));
  mix(static_cast<uint64_t>(params.step_latency.count_ps()));
  mix(static_cast<uint64_t>(params.algorithm));
  mix(static_cast<uint64_t>(params.tree_chunk.n));
  mix(params.low_latency_protocols ? 1 : 0);
  mix(std::bit_cast<uint64_t>(net.params().protocol_efficiency));
  params_fingerprint_ = f;
}

void CollectiveEngine::build(Op op, std::span<const int> group, sim::Bytes bytes, Algorithm algorithm,
                             Plan& out) {
  const Layout layout = make_layout(cluster_, group, seen_);
  const int n = layout.size();
  const double s = bytes.as_double();
  const double c = channels_;
  out.legs.clear();
  out.point_to_point = false;
  out.algorithm = Algorithm::ring;
  out.leg_rate_cap_bps = std::numeric_limits<double>::infinity();
  out.protocol = Protocol::simple;
  const sim::Duration alpha = params_.step_latency;
  switch (op) {
    case Op::send_recv: {
      if (group.size() != 2) {
        throw std::invalid_argument("collective send_recv: the group must be [src, dst], got " +
                                    std::to_string(group.size()) + " ranks");
      }
      out.point_to_point = true;
      out.legs.push_back(network::Leg{group[0], group[1]});
      out.bytes_per_leg = bytes;
      out.fixed_latency = sim::Duration::zero();
      return;
    }
    case Op::all_to_all: {
      sim::Duration h;
      for (const int a : layout.ranks) {
        for (const int b : layout.ranks) {
          if (a == b) continue;
          out.legs.push_back(network::Leg{a, b});
          h = std::max(h, net_.path_latency(a, b));
        }
      }
      out.bytes_per_leg = ceil_bytes(s / n);
      out.fixed_latency = alpha + h;
      return;
    }
    case Op::all_reduce:
      if ((algorithm == Algorithm::tree || algorithm == Algorithm::nvls_tree) && layout.node_slots() > 1) {
        out.algorithm = algorithm;
        const TreeShape shape = tree_legs(net_, layout, channels_, out.legs);
        out.bytes_per_leg = ceil_bytes(s / (2.0 * c));
        const TuningInput in = tuning_input(op, layout);
        const sim::Duration wire = shape.max_leg_latency * shape.steps;
        if (algorithm == Algorithm::nvls_tree) {
          // NVLS inside each domain: NCCL's latency for it, plus the pipeline's fill with NCCL's
          // NVLS-tree chunk (it shrinks with the buffer, so the fill grows with it up to 64 MiB
          // on Hopper).
          cap(in, s, out, wire);
          out.fixed_latency =
              nccl_latency(in, NcclAlgo::nvls_tree, s) +
              pipeline_fill(out, nvls_tree_chunk_bytes(in, s), shape.steps, out.leg_rate_cap_bps);
          return;
        }
        // Simple: the steps' latencies and the fill of `tree_chunk` at the chain's uncontended rate.
        out.fixed_latency = (alpha + shape.max_leg_latency) * shape.steps +
                            pipeline_fill(out, static_cast<double>(params_.tree_chunk.n), shape.steps,
                                          std::numeric_limits<double>::infinity());
        cap(in, s, out, wire);
        if (out.protocol == Protocol::ll128) {
          // LL128 fills the same pipeline with NCCL's LL128 chunk (the proxy posts a slot to the
          // network once it is full). LL's 8-byte lines go on as they land: no fill.
          out.fixed_latency +=
              pipeline_fill(out, tree_chunk_bytes(in, s, out.protocol), shape.steps, out.leg_rate_cap_bps);
        }
        return;
      }
      if (algorithm == Algorithm::nvls && layout.node_slots() == 1 && n > 1) {
        // NVLink SHARP: the switch reduces (multimem load-reduce) and multicasts the result, so
        // every GPU's port sends and receives the buffer once: one leg per member, S each.
        out.algorithm = Algorithm::nvls;
        for (int i = 0; i < n; ++i)
          out.legs.push_back(network::Leg{layout.ranks[static_cast<size_t>(i)],
                                          layout.ranks[static_cast<size_t>((i + 1) % n)]});
        out.bytes_per_leg = bytes;
        const TuningInput in = tuning_input(op, layout);
        out.fixed_latency = nccl_latency(in, NcclAlgo::nvls, s);
        cap(in, s, out, sim::Duration::zero());
        return;
      }
      [[fallthrough]];
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::broadcast: {
      const double nn = n;
      double k = 1.0;
      int steps = n - 1;
      if (op == Op::all_reduce) {
        k = 2.0 * (nn - 1) / nn;
        steps = 2 * (n - 1);
      } else if (op != Op::broadcast) {
        k = (nn - 1) / nn;
      }
      const PlanCache::Ring& r = ring(layout);
      out.legs = r.legs;
      const sim::Duration h = r.hop_latency;
      out.bytes_per_leg = ceil_bytes(k * s / c);
      out.fixed_latency = (alpha + h) * steps;
      if (op != Op::broadcast) cap(tuning_input(op, layout), s, out, h * steps);
      return;
    }
  }
}

sim::Duration CollectiveEngine::pipeline_fill(const Plan& plan, double chunk, int steps,
                                              double rate_cap_bps) {
  uses_.clear();
  for (size_t i = 0; i < plan.legs.size(); ++i)
    uses_.add(plan.legs[i].src_gpu, plan.legs[i].dst_gpu, network::chain_leg_flow(i));
  const double rate =
      std::min(uses_.bottleneck_bps(*capacity_), rate_cap_bps) * net_.params().protocol_efficiency;
  return network::serialization(8.0 * std::min(chunk, plan.bytes_per_leg.as_double()), rate) * steps;
}

sim::Duration CollectiveEngine::estimate_plan(const Plan& plan) {
  uses_.clear();
  sim::Duration latency = plan.fixed_latency;
  for (size_t i = 0; i < plan.legs.size(); ++i) {  // the paths the network gives these legs
    const network::Leg& l = plan.legs[i];
    const sim::Duration lat = uses_.add(l.src_gpu, l.dst_gpu, network::chain_leg_flow(i));
    if (plan.point_to_point) latency = lat;
  }
  const double rate = std::min(uses_.bottleneck_bps(*capacity_), plan.leg_rate_cap_bps);
  if (std::isinf(rate)) return latency;
  const double bits = 8.0 * plan.bytes_per_leg.as_double() / net_.params().protocol_efficiency;
  return latency + network::serialization(bits, rate);
}

Plan CollectiveEngine::plan(Op op, std::span<const int> group, sim::Bytes bytes, Algorithm algorithm) {
  if (algorithm == Algorithm::automatic) algorithm = choose(op, group, bytes);
  Plan p;
  build(op, group, bytes, algorithm, p);
  return p;
}

sim::Duration CollectiveEngine::estimate(Op op, std::span<const int> group, sim::Bytes bytes,
                                         Algorithm algorithm) {
  if (group.size() <= 1 || bytes.n == 0) {
    make_layout(cluster_, group, seen_);
    return sim::Duration::zero();
  }
  if (algorithm == Algorithm::automatic) algorithm = choose(op, group, bytes);
  build(op, group, bytes, algorithm, scratch_);
  return estimate_plan(scratch_);
}

TuningInput CollectiveEngine::tuning_input(Op op, const Layout& layout) const {
  int ppn = 1;
  for (int i = 0; i < layout.node_slots(); ++i)
    ppn = std::max(ppn, static_cast<int>(layout.members(i).size()));
  return node_tuning_input(cluster_.node(), op == Op::all_reduce, static_cast<int>(layout.size()),
                           layout.node_slots(), ppn);
}

void CollectiveEngine::cap(const TuningInput& in, double bytes, Plan& out, sim::Duration wire_latency) const {
  if (bytes <= 0.0) return;
  // The protocol NCCL runs this algorithm with at this size (its choice with NCCL_ALGO forced).
  const NcclAlgo algo = to_nccl(out.algorithm);
  const Choice choice = nccl_choose(in, bytes, &algo);
  const bool low_latency =
      params_.low_latency_protocols && choice.algo == algo && choice.proto != Protocol::simple;
  const AlgoCost cost = nccl_cost(in, algo, low_latency ? choice.proto : Protocol::simple, bytes);
  if (!cost.enabled || cost.algbw <= 0.0) return;
  double algbw = cost.algbw;
  if (algo == NcclAlgo::ring && !low_latency) {
    // The ring's CTAs (network.ctas when given, else NCCL's runtime copies of its search
    // channels: network.channels when given, else NCCL's own) bound it across nodes
    // (nccl_tuning.h ring_net_cta_cap): after NCCL's choice, which does not see them.
    const int ctas = params_.ctas > 0
                         ? params_.ctas
                         : ring_runtime_ctas(in, params_.channels > 0 ? params_.channels : in.channels);
    algbw = std::min(algbw, ring_net_cta_cap(in, ctas) * cost.algbw / cost.busbw);
  }
  const double seconds = bytes / (algbw * 1e9);
  out.leg_rate_cap_bps = 8.0 * out.bytes_per_leg.as_double() / net_.params().protocol_efficiency / seconds;
  if (low_latency) {
    // LL / LL128 put a flag in every 8 (128) bytes that the receiver polls: no per-step
    // handshake through the proxy, so the chain's latency is NCCL's latency of that protocol,
    // never below the hops' own latency (a step cannot beat the wire), and its bandwidth the
    // protocol's (half the wire for LL, 120/128 for LL128).
    out.protocol = choice.proto;
    out.fixed_latency = std::max(sim::Duration::from_seconds(1e-6 * cost.latency_us), wire_latency);
  }
}

Algorithm CollectiveEngine::choose(Op op, std::span<const int> group, sim::Bytes bytes) {
  const Layout layout = make_layout(cluster_, group, seen_);
  if (op == Op::all_to_all || op == Op::send_recv || op == Op::broadcast) return Algorithm::ring;
  const NcclAlgo forced = to_nccl(params_.algorithm);
  const bool automatic = params_.algorithm == Algorithm::automatic;
  return from_nccl(
      nccl_choose(tuning_input(op, layout), bytes.as_double(), automatic ? nullptr : &forced).algo);
}

uint32_t CollectiveEngine::new_slot(CompletionHandler& h, uint64_t tag) {
  return pending_.acquire(Pending{&h, tag});
}

uint64_t group_hash(std::span<const int> group) {
  return network::ranks_hash(group, 0x9E3779B97F4A7C15ULL) | 1U;
}

void CollectiveEngine::start(Op op, std::span<const int> group, sim::Bytes bytes, CompletionHandler& h,
                             uint64_t tag, uint64_t group_hash) {
  if (bytes.n < 0) throw std::invalid_argument("collective: negative byte count");
  if (group.size() <= 1 || bytes.n == 0) {
    make_layout(cluster_, group, seen_);  // still reject bad ranks
    sim_.schedule_in(sim::Duration::zero(), *static_cast<sim::EventHandler*>(this), new_slot(h, tag));
    return;
  }
  const Plan& plan = cached_plan(op, group, bytes, group_hash);
  const uint32_t slot = new_slot(h, tag);
  // The network tag names the delivery (a serial number above the slot). The legs keep their
  // connections' paths whatever the tag (network.h chain_leg_flow), a send_recv its one leg's.
  const uint64_t net_tag = (++serial_ << 32) | slot;
  auto& handler = *static_cast<network::DeliveryHandler*>(this);
  if (plan.point_to_point) {
    net_.send_flow(plan.legs[0].src_gpu, plan.legs[0].dst_gpu, network::chain_leg_flow(0), bytes, handler,
                   net_tag);
  } else {
    net_.send_chain(plan.chain_id, plan.legs, plan.bytes_per_leg, plan.fixed_latency, plan.leg_rate_cap_bps,
                    handler, net_tag);
  }
}

namespace {
// Plan::chain_id: unique in the process (every engine, every thread), so a network shared by
// two engines still never sees one id for two different chains. Ids only name map entries:
// results do not depend on their values.
uint64_t next_chain_id() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

const Plan& CollectiveEngine::cached_plan(Op op, std::span<const int> group, sim::Bytes bytes,
                                          uint64_t group_hash) {
  const uint64_t epoch = cluster_.topology().routing_epoch();
  if (epoch != plans_epoch_ || cached_plans_ > 4096) {  // routes changed, or bounded memory
    plans_.clear();
    cached_plans_ = 0;
    plans_epoch_ = epoch;
  }
  if (group_hash == 0) group_hash = collective::group_hash(group);
  const uint64_t key =
      topology::detail::splitmix64(group_hash ^ ((static_cast<uint64_t>(op) + 1) * 0x9E3779B97F4A7C15ULL) ^
                                   topology::detail::splitmix64(static_cast<uint64_t>(bytes.n)));
  std::vector<CachedPlan>& bucket = plans_[key];
  for (const CachedPlan& c : bucket) {
    if (c.op == op && c.bytes == bytes.n &&
        std::equal(c.group.begin(), c.group.end(), group.begin(), group.end()))
      return *c.plan;
  }
  PlanCache* shared = params_.shared_plans;
  if (shared != nullptr && shared->routing_epoch() != epoch) shared = nullptr;
  const int code = static_cast<int>(op);
  std::shared_ptr<const Plan> plan =
      shared != nullptr ? shared->find(code, bytes.n, params_fingerprint_, group) : nullptr;
  if (plan == nullptr) {
    auto fresh = std::make_shared<Plan>();
    build(op, group, bytes, choose(op, group, bytes), *fresh);
    fresh->chain_id = next_chain_id();
    plan = std::move(fresh);
    if (shared != nullptr) plan = shared->put(code, bytes.n, params_fingerprint_, group, plan);
  }
  ++cached_plans_;
  bucket.push_back(CachedPlan{op, bytes.n, std::vector<int>(group.begin(), group.end()), std::move(plan)});
  return *bucket.back().plan;
}

const PlanCache::Ring& CollectiveEngine::ring(const Layout& layout) {
  const uint64_t epoch = cluster_.topology().routing_epoch();
  if (epoch != rings_epoch_ || rings_.size() > 4096) {  // routes changed (path latencies), or bounded memory
    rings_.clear();
    rings_epoch_ = epoch;
  }
  const uint64_t key = network::ranks_hash(layout.ranks, 0x243F6A8885A308D3ULL);
  std::vector<CachedRing>& bucket = rings_[key];
  for (const CachedRing& c : bucket)
    if (c.ranks == layout.ranks) return *c.ring;
  PlanCache* shared = params_.shared_plans;
  if (shared != nullptr && shared->routing_epoch() != epoch) shared = nullptr;
  std::shared_ptr<const PlanCache::Ring> r =
      shared != nullptr ? shared->find_ring(channels_, layout.ranks) : nullptr;
  if (r == nullptr) {
    auto fresh = std::make_shared<PlanCache::Ring>();
    fresh->hop_latency = ring_legs(net_, layout, channels_, fresh->legs);
    r = std::move(fresh);
    if (shared != nullptr) r = shared->put_ring(channels_, layout.ranks, r);
  }
  bucket.push_back(CachedRing{layout.ranks, std::move(r)});
  return *bucket.back().ring;
}

void CollectiveEngine::on_delivered(uint64_t net_tag) { on_event(net_tag & 0xffffffffU); }

void CollectiveEngine::on_event(uint64_t slot) {
  const Pending p = pending_.release(static_cast<uint32_t>(slot));
  p.handler->on_complete(p.tag);
}

}  // namespace ct::collective

// Packet-level network. Rules:
//
// Ports. Every resource of the cluster is a port with a serializer and a propagation pipe:
//   fabric link direction d = (a -> b): the egress port of a; pipe delay topology.latency(d);
//   NVLink tx: the GPU's egress port, pipe delay node.nvlink_latency;
//   PCIe rx / NVLink rx: host ports at the destination (unbounded queue, zero pipe delay);
//   PCIe tx is not a port: it caps the rate of the flows of its GPU.
// A transfer (flow) takes the ports of Cluster::path(): [NIC egress, fabric..., PCIe rx] or
// [NVLink tx, NVLink rx]. A serializer sends one packet in ceil(8e12 wire / bps) ps and has
// ONE pending event (transmission complete); a pipe keeps a ring of packets in flight and only
// its head has a pending event; zero-delay pipes are direct calls. Store and forward.
//
// Segmentation. The source's injection port (NIC egress or NVLink tx) cuts the flow into
// packets of payload min(mtu, left) and wire max(payload + header, ceil(payload / eff)) bytes
// (eff = NetworkParams::protocol_efficiency), so an uncongested transfer takes
// latency + wire / rate plus one packet per hop, like the flow backend. The port serves its
// flows round-robin; a flow may send when now >= its next_send = start of its previous packet
// + wire / flow rate (DCQCN rate limiter, line rate = min(port, PCIe tx)). When no flow is
// eligible the serializer timer wakes the port at the earliest next_send.
//
// Egress scheduling: strict priority, lossless (1) before lossy (0); a paused priority is
// skipped. Switch shared buffer (one per switch, PacketParams::switch_buffer_bytes), charged
// from admission until the packet's transmission completes:
//   lossy (or lossless with PFC off): admitted iff used + w <= B and
//       q(port, prio) + w <= alpha (B - used)          (dynamic threshold); else dropped;
//   lossless with PFC on: always admitted (lossless_overflow counts admissions beyond B).
// ECN (RED-like) on admission to a switch egress queue of q bytes (that priority):
//   p = 0 for q < Kmin, pmax (q - Kmin) / (Kmax - Kmin) for Kmin <= q < Kmax, 1 for q >= Kmax;
//   Kmin and Kmax per port: EcnParams, or (0) 4 and 16 KB per Gb/s of the port (HPCC's map).
//
// PFC, explicit XOFF/XON state (equivalent to pause quanta refreshed while above XON): per
// ingress port i of a switch and lossless priority, I = bytes buffered in the switch that
// entered through i. I >= XOFF (and not yet paused) sends an XOFF frame; I <= XON sends an
// XON frame. Frames travel on the reverse direction with its latency (no serialization) and
// set/clear the pause of the upstream egress (a switch port or the NIC's injection port).
// XOFF is the shared buffer's dynamic threshold, alpha (B - used) with alpha = dynamic_alpha
// times the port's speed over the NIC rate (at most 1), and XON = XOFF - max frame, both
// re-evaluated as the buffer fills and drains (Broadcom/Mellanox dynamic thresholds; the ns-3
// RDMA model of HPCC uses alpha = 1/8 for NIC-speed ports, doubled per speed doubling). A
// static XOFF/XON is used instead when PfcParams gives one. The per-port headroom for the
// bytes in flight after an XOFF, (301 + 2.16 cable_m) speed_Gbps + 2.72 mtu (mlx5 formula), is
// reported (headroom_bytes). NICs do not send pause frames except in a storm.
//
// Losses: a dropped packet's payload is retransmitted by its source at once (an idealized
// loss notification: no go-back-N, no timeout), ahead of new data.
//
// ECN marking is on admission (default) or on dequeue (EcnParams::mark_on_dequeue: the bytes
// queued behind the packet as it starts transmission, as the ns-3 RDMA model does).
//
// ECN/DCQCN: the destination NIC (notification point) sends a CNP when a CE packet arrives
// and none was sent for the flow in the last cnp_interval. The CNP is a control message that
// arrives after the path latency (no queueing, no bandwidth); CNPs in flight are kept in order
// per flow. The reaction point is packet_dcqcn.h: per flow a decrease-check event on its grid
// (only while a cut is pending) and an increase timer, stopped at line rate.
//
// PFC storm and watchdog: inject_pause_storm makes a NIC send XOFF on every link into it and
// never XON. A switch egress queue paused continuously for PfcParams::watchdog is declared
// stormed (PfcStorm: port, pause start, detection time) and ignores pause frames for that
// priority from then on (action "forward"; it is not restored).
//
// Congestion-spreading analysis (PacketStats):
//   pause tree: each XOFF frame carries (root, hop). When a switch ingress reaches XOFF, the
//     cause is the switch's deepest egress queue of that priority (a scan of its ports, once
//     per XOFF frame); if that queue is not paused it is the congestion root and hop = 1,
//     otherwise root and hop + 1 are inherited from the pause holding it. A storming NIC's
//     XOFF makes the stormed leaf egress a root at hop 0. One record per (paused port,
//     priority): first pause time, hop, root, frame count, deepest hop.
//   victims: every port keeps a paused clock per priority (total time paused so far); a packet
//     stamps it when queued and adds the difference to its flow when dequeued (an injection
//     port does the same per listed flow). A flow with paused time whose path crosses no
//     congestion root (a root of any pause so far) is a victim.
//   buffer dependency: the set of (d1, d2) consecutive fabric directions of lossless flows
//     (PFC on) since the start; packet_stats() searches it for a cycle (packet_analysis.h).
//   byte conservation per switch: bytes offered to its egress queues = bytes transmitted +
//     bytes dropped + bytes queued; time-averaged egress queues since reset_queue_averages().
#include "models/network/packet_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/network/analytical_network.h"
#include "models/network/packet_analysis.h"

namespace ct::network {
namespace {

int64_t ceil_ps(double wire_bytes, double bps) {
  return static_cast<int64_t>(std::ceil(wire_bytes * 8e12 / bps));
}

void require(bool ok, const char* key, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(key) + ": " + what);
}

}  // namespace

static std::string num(double v) {
  std::string t = std::to_string(v);
  while (t.size() > 1 && t.back() == '0') t.pop_back();
  if (!t.empty() && t.back() == '.') t.pop_back();
  return t;
}

void validate(const PacketParams& p) {
  require(p.mtu_bytes > 0 && p.mtu_bytes <= kMaxMtuBytes, "network.mtu",
          "got " + std::to_string(p.mtu_bytes) + " bytes, expected 1 .. " + std::to_string(kMaxMtuBytes) +
              " bytes (the largest jumbo frame links carry)");
  require(p.header_bytes >= 0 && p.header_bytes <= 4096, "network.header_bytes",
          "got " + std::to_string(p.header_bytes) + " bytes, expected 0 .. 4096 bytes");
  require(p.switch_buffer_bytes > 0, "cluster.fabric.switch_buffer",
          "got " + std::to_string(p.switch_buffer_bytes) + " bytes, expected a positive size");
  require(p.buffer_alpha > 0.0, "network.buffer_alpha",
          "got " + num(p.buffer_alpha) + ", expected a positive factor");
  require(p.data_priority >= 0 && p.data_priority < kPriorities, "network.priority",
          "got " + std::to_string(p.data_priority) + ", expected 0 (lossy) or 1 (lossless)");
  require(p.pfc.xoff_bytes >= 0, "network.pfc.xoff",
          "got " + std::to_string(p.pfc.xoff_bytes) + " bytes, expected >= 0 (0 = headroom formula)");
  require(p.pfc.xon_bytes >= 0, "network.pfc.xon",
          "got " + std::to_string(p.pfc.xon_bytes) + " bytes, expected >= 0 (0 = XOFF - one frame)");
  require(p.pfc.xon_bytes <= p.pfc.xoff_bytes || p.pfc.xoff_bytes == 0, "network.pfc.xon",
          "got " + std::to_string(p.pfc.xon_bytes) +
              " bytes, expected <= network.pfc.xoff = " + std::to_string(p.pfc.xoff_bytes) + " bytes");
  require(!p.pfc.enabled || p.pfc.xoff_bytes <= p.switch_buffer_bytes, "cluster.fabric.switch_buffer",
          "got " + std::to_string(p.switch_buffer_bytes) +
              " bytes, expected at least the PFC headroom network.pfc.xoff = " +
              std::to_string(p.pfc.xoff_bytes) + " bytes");
  require(p.pfc.dynamic_alpha > 0.0 && p.pfc.dynamic_alpha <= 1.0, "network.pfc.alpha",
          "got " + num(p.pfc.dynamic_alpha) + ", expected 0 < alpha <= 1");
  require(p.pfc.watchdog >= sim::Duration::zero(), "network.pfc.watchdog",
          "expected a non-negative duration");
  require(p.ecn.kmin_bytes >= 0, "network.ecn.kmin",
          "got " + std::to_string(p.ecn.kmin_bytes) + " bytes, expected >= 0");
  require(p.ecn.kmax_bytes >= 0, "network.ecn.kmax",
          "got " + std::to_string(p.ecn.kmax_bytes) + " bytes, expected >= 0");
  require(p.ecn.kmin_bytes == 0 || p.ecn.kmax_bytes == 0 || p.ecn.kmin_bytes <= p.ecn.kmax_bytes,
          "network.ecn.kmin",
          "got " + std::to_string(p.ecn.kmin_bytes) +
              " bytes, expected <= network.ecn.kmax = " + std::to_string(p.ecn.kmax_bytes) + " bytes");
  // Pmax 0 marks nothing: accepted only with ECN off.
  require((p.ecn.pmax > 0.0 || (!p.ecn.enabled && p.ecn.pmax == 0.0)) && p.ecn.pmax <= 1.0,
          "network.ecn.pmax", "got " + num(p.ecn.pmax) + ", expected a probability in (0, 1]");
  const DcqcnParams& d = p.dcqcn;
  require(d.g > 0.0 && d.g <= 1.0, "network.dcqcn.g", "got " + num(d.g) + ", expected 0 < g <= 1");
  require(d.initial_alpha > 0.0 && d.initial_alpha <= 1.0, "network.dcqcn.initial_alpha",
          "got " + num(d.initial_alpha) + ", expected 0 < alpha <= 1");
  require(d.alpha_period > sim::Duration::zero(), "network.dcqcn.alpha_period", "expected a positive period");
  require(d.increase_period > sim::Duration::zero(), "network.dcqcn.increase_period",
          "expected a positive period");
  require(d.rate_reduce_period >= sim::Duration::zero(), "network.dcqcn.rate_reduce_period",
          "expected a non-negative period");
  require(d.cnp_interval >= sim::Duration::zero(), "network.dcqcn.cnp_interval",
          "expected a non-negative interval");
  require(d.min_dec_factor >= 0.0 && d.min_dec_factor < 1.0, "network.dcqcn.min_dec_factor",
          "got " + num(d.min_dec_factor) + ", expected 0 <= factor < 1");
  require(d.min_rate_bps > 0.0, "network.dcqcn.min_rate", "expected a positive rate");
  require(d.rai_bps > 0.0, "network.dcqcn.rai", "expected a positive rate");
  require(d.rhai_bps > 0.0, "network.dcqcn.rhai", "expected a positive rate");
  require(d.byte_counter >= 0, "network.dcqcn.byte_counter", "expected a non-negative size");
  require(d.fast_recovery_steps >= 1 && d.fast_recovery_steps <= 31, "network.dcqcn.fast_recovery_steps",
          "got " + std::to_string(d.fast_recovery_steps) + ", expected 1 .. 31 (firmware rpg_threshold)");
}

DcqcnParams dcqcn_profile(const std::string& name, double line_rate_bps) {
  DcqcnParams d;  // connectx
  if (name == "connectx") return d;
  if (name == "sigcomm15") {
    d.g = 1.0 / 256.0;
    d.alpha_period = sim::Duration::us(55);
    d.initial_alpha = 1.0;
    d.rate_reduce_period = sim::Duration::zero();  // a cut per CNP
    d.min_dec_factor = 0.0;
    d.min_rate_bps = 100e6;
    d.clamp_target = true;  // Rt = Rc at every CNP
    d.clamp_after_time_inc = true;
    d.increase_period = sim::Duration::us(55);
    d.byte_counter = 10'000'000;
    d.fast_recovery_steps = 5;
    d.rai_bps = 40e6;
    d.rhai_bps = 200e6;
    d.cnp_interval = sim::Duration::us(50);
    return d;
  }
  if (name == "hpcc-ns3" || name == "hpcc-ns3-paper") {
    const double per25 = line_rate_bps / 25e9;
    d.g = 1.0 / 256.0;
    d.alpha_period = sim::Duration::us(1);
    d.initial_alpha = 1.0;
    d.rate_reduce_period = sim::Duration::us(4);
    d.min_dec_factor = 0.0;
    d.min_rate_bps = 1e9;
    d.clamp_target = false;
    d.clamp_after_time_inc = true;
    d.increase_period = sim::Duration::us(300);
    d.byte_counter = 0;
    d.fast_recovery_steps = 1;
    d.rai_bps = 5e6 * per25;
    d.rhai_bps = 50e6 * per25;
    d.cnp_interval = sim::Duration::zero();
    if (name == "hpcc-ns3-paper") {
      d.alpha_period = sim::Duration::us(50);
      d.rate_reduce_period = sim::Duration::us(50);
      d.increase_period = sim::Duration::us(55);
    }
    return d;
  }
  throw std::invalid_argument("network.dcqcn.profile: got \"" + name +
                              "\", expected hpcc-ns3-paper, hpcc-ns3, connectx or sigcomm15");
}

double PacketNetwork::memory_estimate(const Cluster& cluster, const PacketParams& params, int64_t flows,
                                      int64_t bytes) {
  const topology::Topology& topo = cluster.topology();
  // Packets that can exist at once: every switch buffer full (lossless admission can exceed it
  // by the XOFF headroom of its ports, counted as one more buffer), every link's
  // bandwidth-delay product, one packet on every injection port; never more than the bytes.
  double fabric =
      2.0 * static_cast<double>(topo.switch_count()) * static_cast<double>(params.switch_buffer_bytes);
  for (int d = 0; d < topo.link_dir_count(); ++d) {
    fabric += topo.nominal_capacity(d).bps() / 8.0 * topo.latency(d).seconds();
  }
  const double full = static_cast<double>(params.mtu_bytes);
  double packets = fabric / full + static_cast<double>(topo.link_dir_count());
  // Small packets (tails) fill buffers with more packets: one tail per flow.
  packets = std::min(packets + static_cast<double>(std::max<int64_t>(flows, 0)),
                     static_cast<double>(std::max<int64_t>(bytes, 0)) / full +
                         static_cast<double>(std::max<int64_t>(flows, 0)));
  const double ports = static_cast<double>(cluster.resource_count()) *
                       (static_cast<double>(sizeof(Port)) + 2.0 * sizeof(Ring::Entry) * 8.0);
  const double flow_state = static_cast<double>(std::max<int64_t>(flows, 0)) *
                            (static_cast<double>(sizeof(Flow)) + 8.0 * sizeof(int32_t) + 64.0);
  // Pool slot + free-list slot per packet; the vector may hold up to twice its size.
  const double pool = packets * 2.0 * (static_cast<double>(sizeof(Packet)) + sizeof(uint32_t));
  return ports + flow_state + pool;
}

double estimate_packet_memory_bytes(const Cluster& cluster, const PacketParams& params, int64_t flows,
                                    int64_t bytes) {
  return PacketNetwork::memory_estimate(cluster, params, flows, bytes);
}

void check_packet_memory(const Cluster& cluster, const PacketParams& params, int64_t flows, int64_t bytes,
                         double limit_bytes) {
  const double need = estimate_packet_memory_bytes(cluster, params, flows, bytes);
  if (need > limit_bytes) {
    throw std::invalid_argument("network.mode: packet mode would need about " + num(need / 1048576.0) +
                                " MiB for " + std::to_string(flows) + " flows of " + std::to_string(bytes) +
                                " bytes in all, over the " + num(limit_bytes / 1048576.0) +
                                " MiB limit; use network.mode flow, fewer GPUs, or a larger " +
                                "network.mtu");
  }
}

// ---------------------------------------------------------------------------- small parts

void PacketNetwork::Ring::push(int64_t at, uint32_t v, uint32_t aux) {
  if (size == buf.size()) {
    std::vector<Entry> grown(std::max<size_t>(8, buf.size() * 2));
    for (size_t i = 0; i < size; ++i) grown[i] = buf[(head + i) % buf.size()];
    buf.swap(grown);
    head = 0;
  }
  buf[(head + size) % buf.size()] = Entry{at, v, aux};
  ++size;
}

PacketNetwork::Ring::Entry PacketNetwork::Ring::pop() {
  const Entry e = buf[head];
  head = (head + 1) % buf.size();
  --size;
  return e;
}

PacketNetwork::Port::Port(sim::EventHandler* h, uint32_t id)
    : ser(h, event_tag(kSer, id)),
      pipe_timer(h, event_tag(kPipe, id)),
      ctrl_timer(h, event_tag(kCtrl, id)),
      watchdog(h, event_tag(kWatchdog, id)) {}

PacketNetwork::Flow::Flow(sim::EventHandler* h, uint32_t id)
    : cnp_timer(h, event_tag(kCnp, id)),
      cut_timer(h, event_tag(kCut, id)),
      increase_timer(h, event_tag(kIncrease, id)) {}

PacketNetwork::Group::Group(sim::EventHandler* h, uint32_t id) : done(h, event_tag(kDone, id)) {}

// ---------------------------------------------------------------------------- construction

PacketNetwork::PacketNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params,
                             PacketParams packet)
    : sim_(sim), cluster_(cluster), params_(params), packet_(packet), rng_(sim.rng(packet.rng_stream)) {
  network::validate(params_);
  network::validate(packet_);
  const topology::Topology& topo = cluster_.topology();
  const int links = cluster_.link_dir_count();
  const int resources = cluster_.resource_count();
  switch_used_.assign(static_cast<size_t>(topo.switch_count()), 0);
  sw_in_.assign(switch_used_.size(), 0);
  sw_out_.assign(switch_used_.size(), 0);
  sw_drop_.assign(switch_used_.size(), 0);
  const double cable_m =
      packet_.pfc.cable_m >= 0.0 ? packet_.pfc.cable_m : cluster_.spec().fabric.link_latency.seconds() / 5e-9;
  const int64_t max_frame = wire_bytes(packet_.mtu_bytes);
  auto* self = static_cast<sim::EventHandler*>(this);
  for (int r = 0; r < resources; ++r) {
    Port& p = ports_.emplace_back(self, static_cast<uint32_t>(r));
    p.bps = cluster_.resource_capacity_bps(r);
    if (r < links) {
      const topology::VertexId src = topo.source(r);
      p.latency_ps = topo.latency(r).count_ps();
      p.ctrl_latency_ps = topo.latency(topology::Topology::reverse(r)).count_ps();
      if (topo.is_switch(src)) {
        p.kind = Kind::fabric_switch;
        p.sw = src - topo.nic_count();
      } else {
        p.kind = Kind::inject;
      }
      const double gbps = topo.nominal_capacity(r).gbps_value();
      const auto formula = static_cast<int64_t>(
          std::ceil((301.0 + 2.16 * cable_m) * gbps + 2.72 * static_cast<double>(packet_.mtu_bytes)));
      p.headroom = formula;
      p.kmin = packet_.ecn.kmin_bytes > 0 ? packet_.ecn.kmin_bytes
                                          : static_cast<int64_t>(kAutoKminBytesPerGbps * gbps);
      p.kmax = packet_.ecn.kmax_bytes > 0 ? packet_.ecn.kmax_bytes
                                          : static_cast<int64_t>(kAutoKmaxBytesPerGbps * gbps);
      if (packet_.ecn.enabled && topo.is_switch(src)) {
        require(p.kmin <= p.kmax, "network.ecn.kmin",
                "got " + std::to_string(p.kmin) + " bytes at " + cluster_.resource_name(r) +
                    ", expected <= its kmax = " + std::to_string(p.kmax) +
                    " bytes (0 = scaled with the port speed: 4 KB per Gb/s, kmax 16 KB per Gb/s)");
      }
      p.xoff = packet_.pfc.xoff_bytes;  // 0: dynamic threshold
      p.xon =
          packet_.pfc.xoff_bytes > 0
              ? (packet_.pfc.xon_bytes > 0 ? packet_.pfc.xon_bytes : std::max<int64_t>(0, p.xoff - max_frame))
              : 0;
      if (topo.is_switch(topo.target(r))) {
        p.in_sw = topo.target(r) - topo.nic_count();
        const double nic = cluster_.spec().node.nic_rate.bps();
        p.pfc_alpha =
            std::min(1.0, packet_.pfc.dynamic_alpha *
                              std::max(1.0, nic > 0.0 ? topo.nominal_capacity(r).bps() / nic : 1.0));
      }
      if (packet_.pfc.enabled && packet_.pfc.xoff_bytes > 0 && topo.is_switch(topo.target(r))) {
        require(p.xon <= p.xoff, "network.pfc.xon",
                "got " + std::to_string(p.xon) + " bytes, expected <= the XOFF of " +
                    cluster_.resource_name(r) + " = " + std::to_string(p.xoff) + " bytes");
        require(p.xoff <= packet_.switch_buffer_bytes, "cluster.fabric.switch_buffer",
                "got " + std::to_string(packet_.switch_buffer_bytes) +
                    " bytes, expected at least the PFC headroom (XOFF) of " + cluster_.resource_name(r) +
                    " = " + std::to_string(p.xoff) + " bytes");
      }
    } else {
      const int k = (r - links) % 4;
      if (k == 0) {
        p.kind = Kind::inject;
        p.latency_ps = cluster_.node().nvlink_latency.count_ps();
      }
    }
  }
}

int64_t PacketNetwork::wire_bytes(int64_t payload) const {
  const auto padded =
      static_cast<int64_t>(std::ceil(static_cast<double>(payload) / params_.protocol_efficiency - 1e-9));
  return std::max(payload + packet_.header_bytes, padded);
}

int64_t PacketNetwork::xoff_bytes(int32_t d) const { return xoff_now(ports_[static_cast<size_t>(d)]); }
int64_t PacketNetwork::xon_bytes(int32_t d) const { return xon_now(ports_[static_cast<size_t>(d)]); }
int64_t PacketNetwork::headroom_bytes(int32_t d) const { return ports_[static_cast<size_t>(d)].headroom; }

int64_t PacketNetwork::xoff_now(const Port& ip) const {
  if (ip.xoff > 0) return ip.xoff;
  if (ip.in_sw < 0) return std::numeric_limits<int64_t>::max();
  const int64_t free = packet_.switch_buffer_bytes - switch_used_[static_cast<size_t>(ip.in_sw)];
  return static_cast<int64_t>(ip.pfc_alpha * static_cast<double>(std::max<int64_t>(0, free)));
}

int64_t PacketNetwork::xon_now(const Port& ip) const {
  if (ip.xoff > 0) return ip.xon;
  return std::max<int64_t>(0, xoff_now(ip) - wire_bytes(packet_.mtu_bytes));
}

// ---------------------------------------------------------------------------- transfers

uint32_t PacketNetwork::new_group(DeliveryHandler& handler, uint64_t tag) {
  uint32_t id;
  if (!free_groups_.empty()) {
    id = free_groups_.back();
    free_groups_.pop_back();
  } else {
    id = static_cast<uint32_t>(groups_.size());
    groups_.emplace_back(static_cast<sim::EventHandler*>(this), id);
  }
  Group& g = groups_[id];
  g.handler = &handler;
  g.tag = tag;
  g.legs = 0;
  g.extra_ps = 0;
  return id;
}

void PacketNetwork::send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes,
                              DeliveryHandler& handler, uint64_t tag) {
  send_on_flow(src_gpu, dst_gpu, flow_id, bytes, handler, tag, packet_.data_priority);
}

void PacketNetwork::send_on(int src_gpu, int dst_gpu, sim::Bytes bytes, DeliveryHandler& handler,
                            uint64_t tag, int priority) {
  send_on_flow(src_gpu, dst_gpu, tag, bytes, handler, tag, priority);
}

void PacketNetwork::send_on_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes,
                                 DeliveryHandler& handler, uint64_t tag, int priority) {
  if (priority < 0 || priority >= kPriorities) {
    throw std::invalid_argument("network.priority: got " + std::to_string(priority) +
                                ", expected 0 (lossy) or 1 (lossless)");
  }
  cluster_.check_gpu(src_gpu, "network send source");
  cluster_.check_gpu(dst_gpu, "network send destination");
  const uint32_t g = new_group(handler, tag);
  if (src_gpu == dst_gpu || bytes.n <= 0) {
    const sim::Duration lat = src_gpu == dst_gpu ? sim::Duration::zero() : path_latency(src_gpu, dst_gpu);
    sim_.schedule(groups_[g].done, sim_.now() + lat);
    return;
  }
  groups_[g].legs = connection_flows(src_gpu, dst_gpu, bytes.n);
  start_connection(g, src_gpu, dst_gpu, bytes.n, flow_id, priority);
}

int PacketNetwork::connection_flows(int src_gpu, int dst_gpu, int64_t bytes) const {
  if (params_.qps_per_connection <= 1 || cluster_.domain_of(src_gpu) == cluster_.domain_of(dst_gpu)) return 1;
  return static_cast<int>(std::clamp<int64_t>(bytes, 1, params_.qps_per_connection));
}

void PacketNetwork::start_connection(uint32_t group, int src_gpu, int dst_gpu, int64_t bytes,
                                     uint64_t flow_id, int priority, double rate_cap_bps) {
  const int n = connection_flows(src_gpu, dst_gpu, bytes);
  for (int k = 0; k < n; ++k) {
    const int64_t share = bytes / n + (k < bytes % n ? 1 : 0);
    start_flow(group, src_gpu, dst_gpu, share, queue_pair_flow(flow_id, k), priority, rate_cap_bps / n);
  }
}

void PacketNetwork::send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                                   sim::Duration fixed_latency, double leg_rate_cap_bps,
                                   DeliveryHandler& handler, uint64_t tag) {
  for (const Leg& l : legs) {
    cluster_.check_gpu(l.src_gpu, "network send source");
    cluster_.check_gpu(l.dst_gpu, "network send destination");
  }
  const uint32_t g = new_group(handler, tag);
  sim::Duration longest = sim::Duration::zero();
  int real = 0;
  if (bytes_per_leg.n > 0) {
    for (const Leg& l : legs) {
      if (l.src_gpu == l.dst_gpu) continue;
      real += connection_flows(l.src_gpu, l.dst_gpu, bytes_per_leg.n);
      longest = std::max(longest, path_latency(l.src_gpu, l.dst_gpu));
    }
  }
  Group& grp = groups_[g];
  grp.extra_ps = std::max(sim::Duration::zero(), fixed_latency - longest).count_ps();
  grp.legs = real;
  if (real == 0) {
    sim_.schedule(grp.done, sim_.now() + fixed_latency);
    return;
  }
  for (size_t i = 0; i < legs.size(); ++i) {
    const Leg& l = legs[i];
    if (l.src_gpu == l.dst_gpu) continue;
    start_connection(g, l.src_gpu, l.dst_gpu, bytes_per_leg.n, chain_leg_flow(i), packet_.data_priority,
                     leg_rate_cap_bps);
  }
}

void PacketNetwork::start_flow(uint32_t group, int src_gpu, int dst_gpu, int64_t bytes, uint64_t flow_id,
                               int priority, double rate_cap_bps) {
  uint32_t id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back(static_cast<sim::EventHandler*>(this), id);
  }
  Flow& f = flows_[id];
  const sim::Duration latency = cluster_.path(src_gpu, dst_gpu, flow_id, path_);
  f.path.clear();
  // The sender's rate never exceeds the collective's ceiling (a pipelined chain's kernels) nor,
  // across domains, its PCIe path.
  double cap = rate_cap_bps;
  if (cluster_.domain_of(src_gpu) != cluster_.domain_of(dst_gpu)) {
    cap = std::min(cap, ports_[static_cast<size_t>(path_.front())].bps);  // PCIe tx: a rate cap, not a port
    f.path.assign(path_.begin() + 1, path_.end());
  } else {
    f.path.assign(path_.begin(), path_.end());
  }
  f.group = group;
  f.priority = static_cast<uint8_t>(priority);
  f.listed = false;
  f.total = f.unsent = bytes;
  f.retx = f.received = 0;
  f.next_send_ps = sim_.now().ps();
  f.cnp_sent = false;
  f.last_cnp_ps = 0;
  f.line_bps = std::min(cap, ports_[static_cast<size_t>(f.path.front())].bps);
  f.rate_bps = f.line_bps;
  f.reverse_latency_ps = latency.count_ps();
  f.cc.reset(f.line_bps);
  f.cnp_pipe.clear();
  f.active = true;
  f.src_gpu = src_gpu;
  f.dst_gpu = dst_gpu;
  f.tag = flow_id;
  f.paused_ps = 0;
  if (packet_.pfc.enabled && priority == kLosslessPriority) {
    const int links = cluster_.link_dir_count();
    for (size_t h = 1; h < f.path.size(); ++h) {
      const int32_t a = f.path[h - 1];
      const int32_t b = f.path[h];
      if (a < links && b < links) {
        dependencies_.insert(static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32 |
                             static_cast<uint32_t>(b));
      }
    }
  }
  list_flow(id);
  try_start(static_cast<uint32_t>(f.path.front()));
}

void PacketNetwork::list_flow(uint32_t flow) {
  Flow& f = flows_[flow];
  if (f.listed) return;
  f.listed = true;
  Port& p = ports_[static_cast<size_t>(f.path.front())];
  f.mark_ps = paused_clock(p, f.priority, sim_.now().ps());
  p.flows.push_back(flow);
}

void PacketNetwork::leg_done(uint32_t group) {
  Group& g = groups_[group];
  if (--g.legs > 0) return;
  sim_.schedule(g.done, sim_.now() + sim::Duration::ps(g.extra_ps));
}

// ---------------------------------------------------------------------------- ports

uint32_t PacketNetwork::alloc_packet() {
  if (!free_packets_.empty()) {
    const uint32_t id = free_packets_.back();
    free_packets_.pop_back();
    return id;
  }
  packets_.push_back(Packet{});
  return static_cast<uint32_t>(packets_.size() - 1);
}

void PacketNetwork::try_start(uint32_t port) {
  Port& p = ports_[port];
  if (p.busy || !(p.bps > 0.0)) return;
  if (p.kind == Kind::inject) {
    try_inject(port);
    return;
  }
  for (int prio = kPriorities - 1; prio >= 0; --prio) {
    Fifo& q = p.q[prio];
    if (q.head == kNone || (p.paused[prio] && !p.ignore_pause[prio])) continue;
    const uint32_t pkt = q.head;
    Packet& k = packets_[pkt];
    q.head = k.next;
    if (q.head == kNone) q.tail = kNone;
    const int64_t blocked = paused_clock(p, prio, sim_.now().ps()) - k.mark_ps;
    if (blocked > 0) flows_[k.flow].paused_ps += blocked;
    // ECN on dequeue: the bytes queued behind the packet (this priority).
    if (p.kind == Kind::fabric_switch && packet_.ecn.enabled && packet_.ecn.mark_on_dequeue &&
        ecn_mark(p, p.q_bytes[prio] - int64_t{k.wire})) {
      k.ce = 1;
      ++p.marks;
    }
    start_tx(p, pkt);
    return;
  }
}

void PacketNetwork::try_inject(uint32_t port) {
  Port& p = ports_[port];
  const int64_t now = sim_.now().ps();
  int64_t earliest = std::numeric_limits<int64_t>::max();
  const size_t n = p.flows.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t idx = (p.rr + k) % n;
    const uint32_t fid = p.flows[idx];
    Flow& f = flows_[fid];
    if (p.paused[f.priority] && !p.ignore_pause[f.priority]) continue;
    if (f.next_send_ps > now) {
      earliest = std::min(earliest, f.next_send_ps);
      continue;
    }
    // Segment one packet.
    const bool resend = f.retx > 0;
    int64_t& left = resend ? f.retx : f.unsent;
    const int64_t payload = std::min(left, packet_.mtu_bytes);
    left -= payload;
    const int64_t wire = wire_bytes(payload);
    const uint32_t pkt = alloc_packet();
    packets_[pkt] =
        Packet{fid, kNone, static_cast<uint32_t>(payload), static_cast<uint32_t>(wire), 0, f.priority, 0, 0};
    const int64_t clock = paused_clock(p, f.priority, now);
    f.paused_ps += clock - f.mark_ps;
    f.mark_ps = clock;
    ++packets_sent_;
    if (resend) ++retransmitted_;
    f.next_send_ps = now + ceil_ps(static_cast<double>(wire), f.rate_bps);
    if (packet_.congestion_control == CongestionControl::dcqcn && f.cc.on_bytes(wire, packet_.dcqcn)) {
      f.rate_bps = f.cc.rate();
      if (f.cc.at_line_rate()) sim_.cancel(f.increase_timer);
    }
    if (f.unsent == 0 && f.retx == 0) {  // all handed to the wire: leave the list
      f.listed = false;
      p.flows[idx] = p.flows.back();
      p.flows.pop_back();
      p.rr = p.flows.empty() ? 0 : idx % p.flows.size();
    } else {
      p.rr = (idx + 1) % n;
    }
    queue_change(p, f.priority, wire);
    p.max_q = std::max(p.max_q, p.q_bytes[0] + p.q_bytes[1]);
    start_tx(p, pkt);
    return;
  }
  if (earliest != std::numeric_limits<int64_t>::max()) {
    sim_.schedule(p.ser, sim::Time::from_ps(earliest));  // rate-limiter wake-up
  }
}

void PacketNetwork::start_tx(Port& p, uint32_t pkt) {
  const Packet& k = packets_[pkt];
  p.busy = true;
  p.tx = pkt;
  const int64_t dur = ceil_ps(static_cast<double>(k.wire), p.bps);
  p.busy_ps += dur;
  p.tx_bytes += k.wire;
  ++p.tx_packets;
  sim_.schedule(p.ser, sim_.now() + sim::Duration::ps(dur));
}

void PacketNetwork::tx_complete(uint32_t port) {
  Port& p = ports_[port];
  const uint32_t pkt = p.tx;
  p.busy = false;
  p.tx = kNone;
  Packet& k = packets_[pkt];
  const int prio = k.priority;
  queue_change(p, prio, -int64_t{k.wire});
  if (p.kind == Kind::fabric_switch) {
    switch_used_[static_cast<size_t>(p.sw)] -= k.wire;
    sw_out_[static_cast<size_t>(p.sw)] += k.wire;
    const Flow& f = flows_[k.flow];
    const auto in = static_cast<uint32_t>(f.path[k.hop - 1U]);
    Port& ip = ports_[in];
    ip.in_bytes[prio] -= k.wire;
    if (ip.xoff_sent[prio] && ip.in_bytes[prio] <= xon_now(ip)) send_pause(in, prio, false);
  }
  if (p.latency_ps == 0) {
    arrive(pkt);
  } else {
    const int64_t at = sim_.now().ps() + p.latency_ps;
    p.pipe.push(at, pkt);
    if (p.pipe.size == 1) sim_.schedule(p.pipe_timer, sim::Time::from_ps(at));
  }
  try_start(port);
}

void PacketNetwork::arrive(uint32_t pkt) {
  Packet& k = packets_[pkt];
  ++k.hop;
  const Flow& f = flows_[k.flow];
  if (k.hop == f.path.size()) {
    receive(pkt);
  } else {
    enqueue(static_cast<uint32_t>(f.path[k.hop]), pkt);
  }
}

bool PacketNetwork::ecn_mark(const Port& port, int64_t q) {
  const EcnParams& e = packet_.ecn;
  if (q < port.kmin) return false;
  if (q >= port.kmax) return true;
  const double p = e.pmax * static_cast<double>(q - port.kmin) / static_cast<double>(port.kmax - port.kmin);
  return rng_.uniform01() < p;
}

void PacketNetwork::enqueue(uint32_t port, uint32_t pkt) {
  Port& p = ports_[port];
  Packet& k = packets_[pkt];
  const int prio = k.priority;
  const int64_t w = k.wire;
  if (p.kind == Kind::fabric_switch) {
    int64_t& used = switch_used_[static_cast<size_t>(p.sw)];
    const int64_t buffer = packet_.switch_buffer_bytes;
    const bool lossless = packet_.pfc.enabled && prio == kLosslessPriority;
    sw_in_[static_cast<size_t>(p.sw)] += w;
    if (!lossless) {
      const double limit = packet_.buffer_alpha * static_cast<double>(buffer - used);
      if (used + w > buffer || static_cast<double>(p.q_bytes[prio] + w) > limit) {
        drop(p, pkt);
        return;
      }
    } else if (used + w > buffer) {
      ++overflow_;
    }
    if (packet_.ecn.enabled && !packet_.ecn.mark_on_dequeue && ecn_mark(p, p.q_bytes[prio])) {
      k.ce = 1;
      ++p.marks;
    }
    used += w;
    const auto in = static_cast<uint32_t>(flows_[k.flow].path[k.hop - 1U]);
    Port& ip = ports_[in];
    ip.in_bytes[prio] += w;
    if (lossless && !ip.xoff_sent[prio] && ip.in_bytes[prio] >= xoff_now(ip)) {
      // Cause: the switch's deepest egress queue of this priority (a scan of the switch's
      // ports, once per XOFF frame). It is the congestion root unless it is paused itself; then
      // the root is that pause's root, one hop further.
      const topology::Topology& topo = cluster_.topology();
      uint32_t cause = port;
      for (const topology::LinkDir d : topo.out_links(topo.target(static_cast<topology::LinkDir>(in)))) {
        if (ports_[static_cast<size_t>(d)].q_bytes[prio] > ports_[cause].q_bytes[prio]) {
          cause = static_cast<uint32_t>(d);
        }
      }
      const Port& c = ports_[cause];
      const bool held = c.paused[prio] && !c.ignore_pause[prio];
      const uint32_t root = held ? c.pause_root[prio] : cause;
      const uint32_t hop = held ? c.pause_hop[prio] + 1U : 1U;
      ports_[root].is_root = true;
      send_pause(in, prio, true, root, hop);
    }
  }
  k.mark_ps = paused_clock(p, prio, sim_.now().ps());
  queue_change(p, prio, w);
  p.max_q = std::max(p.max_q, p.q_bytes[0] + p.q_bytes[1]);
  Fifo& q = p.q[prio];
  k.next = kNone;
  if (q.tail == kNone) {
    q.head = pkt;
  } else {
    packets_[q.tail].next = pkt;
  }
  q.tail = pkt;
  if (!p.busy) try_start(port);
}

void PacketNetwork::drop(Port& p, uint32_t pkt) {
  ++p.drops;
  ++drops_;
  const Packet& k = packets_[pkt];
  if (p.kind == Kind::fabric_switch) sw_drop_[static_cast<size_t>(p.sw)] += k.wire;
  const uint32_t fid = k.flow;
  flows_[fid].retx += k.payload;
  free_packets_.push_back(pkt);
  list_flow(fid);
  try_start(static_cast<uint32_t>(flows_[fid].path.front()));
}

void PacketNetwork::receive(uint32_t pkt) {
  const Packet k = packets_[pkt];
  free_packets_.push_back(pkt);
  ++packets_delivered_;
  Flow& f = flows_[k.flow];
  const int64_t now = sim_.now().ps();
  if (k.ce) {
    ++ce_delivered_;
    if (packet_.congestion_control == CongestionControl::dcqcn &&
        (!f.cnp_sent || now - f.last_cnp_ps >= packet_.dcqcn.cnp_interval.count_ps())) {
      f.cnp_sent = true;
      f.last_cnp_ps = now;
      ++cnps_;
      const int64_t at = now + f.reverse_latency_ps;
      f.cnp_pipe.push(at, 0);
      if (f.cnp_pipe.size == 1) sim_.schedule(f.cnp_timer, sim::Time::from_ps(at));
    }
  }
  f.received += k.payload;
  if (f.received < f.total) return;
  sim_.cancel(f.cnp_timer);
  sim_.cancel(f.cut_timer);
  sim_.cancel(f.increase_timer);
  f.cnp_pipe.clear();
  flow_done_analysis(f);
  f.active = false;
  const uint32_t group = f.group;
  free_flows_.push_back(k.flow);
  leg_done(group);
}

// ---------------------------------------------------------------------------- PFC

void PacketNetwork::send_pause(uint32_t port, int priority, bool xoff, uint32_t root, uint32_t hop) {
  Port& p = ports_[port];
  p.xoff_sent[priority] = xoff;
  if (xoff) {
    ++pause_frames_;
    ++p.pause_on;
  } else {
    ++resume_frames_;
  }
  const int64_t at = sim_.now().ps() + p.ctrl_latency_ps;
  p.ctrl.push(at, static_cast<uint32_t>(priority) | (xoff ? 0x100U : 0U) | std::min(hop, 0xffffU) << 16,
              root);
  if (p.ctrl.size == 1) sim_.schedule(p.ctrl_timer, sim::Time::from_ps(at));
}

void PacketNetwork::pause_edge(uint32_t port, int priority, uint32_t root, uint32_t hop) {
  Port& p = ports_[port];
  if (root == kNone) root = port;
  const auto h = static_cast<uint16_t>(std::min(hop, 0xffffU));
  if (!p.paused[priority]) {
    p.pause_root[priority] = root;
    p.pause_hop[priority] = h;
  }
  max_hop_ = std::max(max_hop_, static_cast<int>(h));
  if (p.edge[priority] == kNone) {
    p.edge[priority] = static_cast<uint32_t>(edges_.size());
    edges_.push_back(EdgeRecord{port, static_cast<uint8_t>(priority), h, h, root, sim_.now().ps(), 0});
  }
  EdgeRecord& e = edges_[p.edge[priority]];
  ++e.frames;
  e.max_hop = std::max(e.max_hop, h);
}

void PacketNetwork::set_paused(uint32_t port, int priority, bool on) {
  Port& p = ports_[port];
  const int64_t now = sim_.now().ps();
  if (on) {
    if (p.ignore_pause[priority] || p.paused[priority]) return;
    p.paused[priority] = true;
    p.paused_since_ps[priority] = now;
    if (p.kind == Kind::fabric_switch && priority == kLosslessPriority &&
        packet_.pfc.watchdog > sim::Duration::zero()) {
      sim_.schedule(p.watchdog, sim::Time::from_ps(now) + packet_.pfc.watchdog);
    }
    return;
  }
  if (!p.paused[priority]) return;
  p.paused[priority] = false;
  p.paused_ps[priority] += now - p.paused_since_ps[priority];
  if (priority == kLosslessPriority) sim_.cancel(p.watchdog);
  try_start(port);
}

void PacketNetwork::queue_change(Port& p, int priority, int64_t delta) {
  const int64_t now = sim_.now().ps();
  p.q_area += static_cast<double>(p.q_bytes[0] + p.q_bytes[1]) * static_cast<double>(now - p.q_last_ps);
  p.q_last_ps = now;
  p.q_bytes[priority] += delta;
}

void PacketNetwork::reset_queue_averages() {
  const int64_t now = sim_.now().ps();
  q_avg_start_ps_ = now;
  for (Port& p : ports_) {
    p.q_area = 0.0;
    p.q_last_ps = now;
  }
}

bool PacketNetwork::is_victim(const Flow& f) const {
  for (const int32_t r : f.path) {
    if (ports_[static_cast<size_t>(r)].is_root) return false;
  }
  return true;
}

void PacketNetwork::flow_done_analysis(const Flow& f) {
  if (f.paused_ps <= 0) return;
  ++paused_flows_;
  if (!is_victim(f)) return;
  ++victims_;
  victim_ps_ += f.paused_ps;
  if (victim_list_.size() < packet_.max_victim_flows) {
    victim_list_.push_back(
        VictimFlow{f.src_gpu, f.dst_gpu, f.tag, static_cast<double>(f.paused_ps) * 1e-12, true});
  }
}

void PacketNetwork::on_watchdog(uint32_t port) {
  Port& p = ports_[port];
  const int prio = kLosslessPriority;
  if (!p.paused[prio]) return;
  storms_.push_back(PfcStorm{static_cast<int32_t>(port), cluster_.resource_name(static_cast<int32_t>(port)),
                             prio, static_cast<double>(p.paused_since_ps[prio]) * 1e-12,
                             sim_.now().seconds()});
  set_paused(port, prio, false);
  p.ignore_pause[prio] = true;
}

void PacketNetwork::inject_pause_storm(int nic_id, sim::Time at) {
  const topology::Topology& topo = cluster_.topology();
  if (nic_id < 0 || nic_id >= topo.nic_count()) {
    throw std::out_of_range("faults.pause_storm: NIC " + std::to_string(nic_id) + " is not in [0, " +
                            std::to_string(topo.nic_count()) + ")");
  }
  const auto index = static_cast<uint32_t>(storm_nics_.size());
  storm_nics_.push_back(nic_id);
  sim_.schedule_at(at, *this, event_tag(kStorm, index));
}

// ---------------------------------------------------------------------------- DCQCN

void PacketNetwork::on_cnp(uint32_t flow) {
  Flow& f = flows_[flow];
  f.cnp_pipe.pop();
  if (f.cnp_pipe.size > 0) sim_.schedule(f.cnp_timer, sim::Time::from_ps(f.cnp_pipe.front().at_ps));
  const int64_t now = sim_.now().ps();
  f.cc.on_cnp(now, packet_.dcqcn);
  if (!f.cut_timer.pending()) {
    sim_.schedule(f.cut_timer, sim::Time::from_ps(f.cc.next_cut_ps(now, packet_.dcqcn)));
  }
}

void PacketNetwork::on_cut(uint32_t flow) {
  Flow& f = flows_[flow];
  if (!f.cc.on_cut_check(sim_.now().ps(), packet_.dcqcn)) return;
  f.rate_bps = f.cc.rate();
  sim_.cancel(f.increase_timer);
  sim_.schedule(f.increase_timer, sim_.now() + packet_.dcqcn.increase_period);
}

void PacketNetwork::on_increase(uint32_t flow) {
  Flow& f = flows_[flow];
  const bool more = f.cc.on_timer(packet_.dcqcn);
  f.rate_bps = f.cc.rate();
  if (more) sim_.schedule(f.increase_timer, sim_.now() + packet_.dcqcn.increase_period);
}

// ---------------------------------------------------------------------------- events

void PacketNetwork::on_event(uint64_t tag) {
  const auto kind = static_cast<EventKind>(tag >> 56);
  const auto index = static_cast<uint32_t>(tag & ((uint64_t{1} << 56) - 1));
  switch (kind) {
    case kSer:
      if (ports_[index].busy) {
        tx_complete(index);
      } else {
        try_start(index);
      }
      return;
    case kPipe: {
      Port& p = ports_[index];
      const Ring::Entry e = p.pipe.pop();
      if (p.pipe.size > 0) sim_.schedule(p.pipe_timer, sim::Time::from_ps(p.pipe.front().at_ps));
      arrive(e.value);
      return;
    }
    case kCtrl: {
      Port& p = ports_[index];
      const Ring::Entry e = p.ctrl.pop();
      if (p.ctrl.size > 0) sim_.schedule(p.ctrl_timer, sim::Time::from_ps(p.ctrl.front().at_ps));
      const int prio = static_cast<int>(e.value & 0xffU);
      const bool xoff = (e.value & 0x100U) != 0;
      if (xoff) pause_edge(index, prio, e.aux, e.value >> 16);
      set_paused(index, prio, xoff);
      return;
    }
    case kWatchdog:
      on_watchdog(index);
      return;
    case kCnp:
      on_cnp(index);
      return;
    case kCut:
      on_cut(index);
      return;
    case kIncrease:
      on_increase(index);
      return;
    case kDone: {
      Group& g = groups_[index];
      DeliveryHandler* handler = g.handler;
      const uint64_t user_tag = g.tag;
      free_groups_.push_back(index);
      handler->on_delivered(user_tag);
      return;
    }
    case kStorm: {
      const topology::Topology& topo = cluster_.topology();
      const int nic = storm_nics_[index];
      for (const topology::LinkDir up : topo.out_links(nic)) {
        const auto d = static_cast<uint32_t>(topology::Topology::reverse(up));
        ports_[d].is_root = true;
        send_pause(d, kLosslessPriority, true, d, 0);  // never followed by an XON
      }
      return;
    }
  }
}

// ---------------------------------------------------------------------------- statistics

sim::Duration PacketNetwork::path_latency(int src_gpu, int dst_gpu) const {
  return cluster_.path(src_gpu, dst_gpu, 0, path_);
}

sim::Bandwidth PacketNetwork::path_bandwidth(int src_gpu, int dst_gpu) const {
  cluster_.path(src_gpu, dst_gpu, 0, path_);
  double best = std::numeric_limits<double>::infinity();
  for (const int32_t r : path_) best = std::min(best, ports_[static_cast<size_t>(r)].bps);
  return sim::Bandwidth::bits_per_s(best);
}

void PacketNetwork::set_resource_capacity(int32_t resource, sim::Bandwidth capacity) {
  if (resource < 0 || resource >= cluster_.resource_count()) {
    throw std::out_of_range("network resource " + std::to_string(resource) + " out of range");
  }
  ports_[static_cast<size_t>(resource)].bps = capacity.bps();
  try_start(static_cast<uint32_t>(resource));
}

LinkStats PacketNetwork::link_stats(int32_t resource) const {
  const Port& p = ports_[static_cast<size_t>(resource)];
  LinkStats s;
  s.resource = resource;
  s.name = cluster_.resource_name(resource);
  s.bytes = p.tx_bytes;
  s.busy_s = static_cast<double>(p.busy_ps) * 1e-12;
  const double now = sim_.now().seconds();
  const double cap = cluster_.resource_capacity_bps(resource);
  s.utilization = now > 0.0 && cap > 0.0 ? std::min(1.0, p.tx_bytes * 8.0 / cap / now) : 0.0;
  return s;
}

std::vector<LinkStats> PacketNetwork::top_links(size_t k) const {
  std::vector<LinkStats> all;
  for (int32_t r = 0; r < cluster_.resource_count(); ++r) {
    if (ports_[static_cast<size_t>(r)].tx_packets > 0) all.push_back(link_stats(r));
  }
  std::sort(all.begin(), all.end(), [](const LinkStats& a, const LinkStats& b) {
    return a.utilization != b.utilization ? a.utilization > b.utilization : a.resource < b.resource;
  });
  if (all.size() > k) all.resize(k);
  return all;
}

double PacketNetwork::max_link_utilization() const {
  double best = 0.0;
  for (int32_t r = 0; r < cluster_.resource_count(); ++r) {
    if (ports_[static_cast<size_t>(r)].tx_packets > 0) best = std::max(best, link_stats(r).utilization);
  }
  return best;
}

QueueSnapshot PacketNetwork::queue_snapshot() const {
  QueueSnapshot s;
  for (const Port& p : ports_) {
    int64_t bytes = 0;
    for (int prio = 0; prio < kPriorities; ++prio) {
      bytes += p.q_bytes[prio];
      if (p.paused[prio] && !p.ignore_pause[prio]) ++s.paused_queues;
    }
    s.queued_bytes += bytes;
    s.max_queue_bytes = std::max(s.max_queue_bytes, bytes);
  }
  return s;
}

PacketStats PacketNetwork::packet_stats() const {
  PacketStats s;
  s.packets_sent = packets_sent_;
  s.packets_delivered = packets_delivered_;
  s.retransmitted_packets = retransmitted_;
  s.ecn_marked_packets = ce_delivered_;
  s.ecn_marked_fraction = packets_delivered_ > 0
                              ? static_cast<double>(ce_delivered_) / static_cast<double>(packets_delivered_)
                              : 0.0;
  s.cnps = cnps_;
  s.pfc_pause_frames = pause_frames_;
  s.pfc_resume_frames = resume_frames_;
  s.dropped_packets = drops_;
  s.lossless_overflow_packets = overflow_;
  s.pfc_storms = storms_;
  const int64_t now = sim_.now().ps();
  const int links = cluster_.link_dir_count();
  for (int32_t r = 0; r < cluster_.resource_count(); ++r) {
    const Port& p = ports_[static_cast<size_t>(r)];
    int64_t paused = 0;
    for (int prio = 0; prio < kPriorities; ++prio) {
      paused += p.paused_ps[prio] + (p.paused[prio] ? now - p.paused_since_ps[prio] : 0);
    }
    s.pfc_paused_time_s += static_cast<double>(paused) * 1e-12;
    s.max_queue_bytes = std::max(s.max_queue_bytes, p.max_q);
    const uint64_t sent =
        r < links ? ports_[static_cast<size_t>(topology::Topology::reverse(r))].pause_on : 0;
    if (p.tx_packets == 0 && p.pause_on == 0 && sent == 0) continue;
    PortPacketStats ps;
    ps.resource = r;
    ps.name = cluster_.resource_name(r);
    ps.max_queue_bytes = p.max_q;
    ps.tx_packets = p.tx_packets;
    ps.pause_frames_sent = sent;
    ps.pause_frames_received = p.pause_on;
    ps.paused_time_s = static_cast<double>(paused) * 1e-12;
    ps.dropped_packets = p.drops;
    ps.ecn_marked_packets = p.marks;
    const int64_t span = now - q_avg_start_ps_;
    if (span > 0) {
      const double area = p.q_area + static_cast<double>(p.q_bytes[0] + p.q_bytes[1]) *
                                         static_cast<double>(now - p.q_last_ps);
      ps.mean_queue_bytes = area / static_cast<double>(span);
    }
    s.ports.push_back(std::move(ps));
  }

  // Pause propagation tree.
  s.max_pause_hops = max_hop_;
  s.pause_tree.reserve(edges_.size());
  for (const EdgeRecord& e : edges_) {
    PauseEdge pe;
    pe.paused = static_cast<int32_t>(e.paused);
    pe.paused_name = cluster_.resource_name(pe.paused);
    pe.pausing_name = e.paused < static_cast<uint32_t>(links)
                          ? cluster_.resource_name(topology::Topology::reverse(pe.paused))
                          : pe.paused_name;
    pe.priority = e.priority;
    pe.first_s = static_cast<double>(e.first_ps) * 1e-12;
    pe.hop = e.hop;
    pe.max_hop = e.max_hop;
    pe.root = static_cast<int32_t>(e.root);
    pe.root_name = cluster_.resource_name(pe.root);
    pe.frames = e.frames;
    s.pause_tree.push_back(std::move(pe));
  }

  // Victims: the completed ones, then the flows in flight.
  s.paused_flows = paused_flows_;
  s.victim_flow_count = victims_;
  s.victim_paused_time_s = static_cast<double>(victim_ps_) * 1e-12;
  s.victim_flows = victim_list_;
  for (const Flow& f : flows_) {
    if (!f.active) continue;
    int64_t paused = f.paused_ps;
    if (f.listed) {
      paused += paused_clock(ports_[static_cast<size_t>(f.path.front())], f.priority, now) - f.mark_ps;
    }
    if (paused <= 0) continue;
    ++s.paused_flows;
    if (!is_victim(f)) continue;
    ++s.victim_flow_count;
    s.victim_paused_time_s += static_cast<double>(paused) * 1e-12;
    if (s.victim_flows.size() < packet_.max_victim_flows) {
      s.victim_flows.push_back(
          VictimFlow{f.src_gpu, f.dst_gpu, f.tag, static_cast<double>(paused) * 1e-12, false});
    }
  }

  // Channel dependency graph of the lossless routes.
  std::vector<std::pair<int32_t, int32_t>> deps;
  deps.reserve(dependencies_.size());
  for (const uint64_t e : dependencies_) {
    deps.emplace_back(static_cast<int32_t>(e >> 32), static_cast<int32_t>(e & 0xffffffffU));
  }
  std::sort(deps.begin(), deps.end());  // deterministic cycle choice
  s.dependency_edges = deps.size();
  const std::vector<int32_t> cycle = find_cycle(links, deps);
  s.buffer_dependency_cycle = !cycle.empty();
  for (const int32_t d : cycle) s.dependency_cycle.push_back(cluster_.resource_name(d));

  // Byte conservation per switch.
  std::vector<int64_t> queued(switch_used_.size(), 0);
  for (const Port& p : ports_) {
    if (p.kind == Kind::fabric_switch) queued[static_cast<size_t>(p.sw)] += p.q_bytes[0] + p.q_bytes[1];
  }
  const topology::Topology& topo = cluster_.topology();
  for (size_t w = 0; w < switch_used_.size(); ++w) {
    if (sw_in_[w] == 0) continue;
    SwitchPacketStats ss;
    ss.name = topo.vertex(topo.nic_count() + static_cast<int>(w)).name;
    ss.bytes_in = sw_in_[w];
    ss.bytes_out = sw_out_[w];
    ss.bytes_dropped = sw_drop_[w];
    ss.bytes_queued = queued[w];
    s.switches.push_back(std::move(ss));
  }
  return s;
}

}  // namespace ct::network

// Packet-level network: MTU packets through NIC and switch egress ports with shared switch
// buffers, PFC per ingress port and priority, RED-like ECN marking, DCQCN at the NICs and a
// PFC watchdog. The rules and their approximations are stated in packet_network.cpp.
//
// For traffic studies (incast, ECN/PFC tuning, PFC storms) on up to ~1K GPUs; step replay
// keeps using the flow backend. On an uncongested transfer it agrees with the flow backend:
// every data packet occupies max(payload + header_bytes, ceil(payload / protocol_efficiency))
// bytes on the wire, so the wire overhead is at least the RoCEv2 headers and at least the
// protocol overhead the other backends charge.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/packet_dcqcn.h"
#include "sim/rng.h"
#include "sim/simulation.h"

namespace ct::network {

// Priorities (traffic classes). Strict priority at every egress: higher index first.
inline constexpr int kLossyPriority = 0;
inline constexpr int kLosslessPriority = 1;  // RDMA; PFC applies to it
inline constexpr int kPriorities = 2;

enum class CongestionControl : uint8_t { none, dcqcn };

struct PfcParams {
  bool enabled = true;  // false: the lossless priority is dropped like the lossy one
  // Per ingress port and lossless priority: XOFF when the bytes buffered in the switch that
  // entered through the port reach xoff_bytes, XON when they fall to xon_bytes.
  // 0 = mlx5 headroom formula (301 + 2.16 cable_m) speed_Gbps + 2.72 mtu, and XON = XOFF
  // minus one max-size frame.
  int64_t xoff_bytes = 0;
  int64_t xon_bytes = 0;
  // Dynamic threshold when xoff_bytes is 0: XOFF = alpha (buffer - used) for NIC-speed ports.
  double dynamic_alpha = 0.125;
  // Cable length for the formula; < 0 = fabric link_latency at 5 ns/m (500 ns -> 100 m).
  double cable_m = -1.0;
  // PFC watchdog on switch egress queues: paused continuously for longer than this = storm;
  // the queue then ignores pause frames for that priority. Zero disables it.
  sim::Duration watchdog = sim::Duration::ms(200);
};

struct EcnParams {
  bool enabled = true;
  // 0 = scaled with the port speed: 4 KB (kmin) and 16 KB (kmax) per Gb/s, HPCC's map
  // (100 / 400 KB at 25 Gb/s, 400 / 1600 KB at 100 Gb/s; kAutoKmin/KmaxBytesPerGbps).
  int64_t kmin_bytes = 100'000;
  int64_t kmax_bytes = 400'000;
  double pmax = 0.2;
  // Mark when the packet leaves the egress queue (queue behind it) instead of on admission.
  bool mark_on_dequeue = false;
};

struct PacketParams {
  int64_t mtu_bytes = 4096;                         // payload per packet (network.mtu)
  int64_t header_bytes = 58;                        // RoCEv2: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4
  int64_t switch_buffer_bytes = int64_t{64} << 20;  // cluster.fabric.switch_buffer
  double buffer_alpha = 1.0;                        // dynamic threshold: queue <= alpha x free shared buffer
  int data_priority = kLosslessPriority;            // priority of send() / send_pipelined()
  PfcParams pfc;
  EcnParams ecn;
  CongestionControl congestion_control = CongestionControl::dcqcn;
  DcqcnParams dcqcn;
  uint64_t rng_stream = 0x7061636b6574ULL;  // ECN marking draws
  // Analysis: at most this many victim flows are listed (all are counted).
  size_t max_victim_flows = 1000;
};

inline constexpr double kAutoKminBytesPerGbps = 4000.0;
inline constexpr double kAutoKmaxBytesPerGbps = 16000.0;

// Largest MTU (payload) a packet may have: jumbo frames of 9216 B, the usual switch maximum.
inline constexpr int64_t kMaxMtuBytes = 9216;

// Throws std::invalid_argument naming the scenario key of the first bad value and its bound.
void validate(const PacketParams& params);

// make_network (network.h) with the packet backend's parameters: every run path (training
// steps, trace replays, traffic studies) builds its network here, so a scenario's ECN, PFC,
// DCQCN, MTU and buffer reach packet mode whichever path runs it.
std::unique_ptr<Network> make_network(std::string_view mode, sim::Simulation& sim, const Cluster& cluster,
                                      NetworkParams params, const PacketParams& packet);

// Upper estimate of the memory a packet run takes: ports, flows, and the packets that can be
// in flight at once (bounded by the bytes to send and by what the fabric can hold: switch
// buffers plus the links' bandwidth-delay products, one MTU packet per injection port).
// `flows` and `bytes` are the transfers of the run that can be active together.
[[nodiscard]] double estimate_packet_memory_bytes(const Cluster& cluster, const PacketParams& params,
                                                  int64_t flows, int64_t bytes);
// Throws std::invalid_argument naming network.mode when that estimate exceeds limit_bytes,
// suggesting the flow backend.
void check_packet_memory(const Cluster& cluster, const PacketParams& params, int64_t flows, int64_t bytes,
                         double limit_bytes);

// One edge of the pause propagation tree: the port `pausing_name` (vertex b's end of the cable
// a -> b) sent XOFF frames to the upstream egress `paused` (a -> b). Kept once per (paused
// port, priority): the first pause and the frame count (memory bounded by the port count).
struct PauseEdge {
  int32_t paused = -1;       // resource of the paused upstream egress a -> b
  std::string paused_name;   // "spine0.pod0->leaf1"
  std::string pausing_name;  // b's port, named by its egress direction "leaf1->spine0.pod0"
  int priority = kLosslessPriority;
  double first_s = 0.0;  // the first XOFF took effect at the paused port
  // Pause hops from the congestion root at the first pause: 1 = paused because the root egress
  // queue (not itself paused) backed up; k + 1 = because an egress paused at hop k backed up;
  // 0 = the root itself, paused by a storming NIC.
  int hop = 0;
  int max_hop = 0;    // over all XOFF frames on this edge
  int32_t root = -1;  // the congestion root egress (resource) of the first pause
  std::string root_name;
  uint64_t frames = 0;  // XOFF frames received on this edge
};

// A flow that waited behind a paused egress (its injection port or a switch queue) although
// its path does not cross any congestion root (a root of some pause edge): collateral damage.
struct VictimFlow {
  int src_gpu = -1;
  int dst_gpu = -1;
  uint64_t tag = 0;
  double paused_s = 0.0;   // summed over its packets: time queued while the port was paused
  bool completed = false;  // false: still in flight when the statistics were taken
};

// Byte conservation of one switch: bytes_in = bytes_out + bytes_dropped + bytes_queued.
struct SwitchPacketStats {
  std::string name;
  int64_t bytes_in = 0;   // wire bytes offered to its egress queues (dropped ones too)
  int64_t bytes_out = 0;  // transmissions completed
  int64_t bytes_dropped = 0;
  int64_t bytes_queued = 0;  // in its egress queues now (being transmitted included)
};

// The queues at one instant: bytes waiting in every egress queue (ports of switches and NICs,
// all priorities, the packet on the wire included), the deepest such queue, and the egress
// queues (port, priority) paused now.
struct QueueSnapshot {
  int64_t queued_bytes = 0;
  int64_t max_queue_bytes = 0;
  int paused_queues = 0;
};

struct PfcStorm {
  int32_t resource = -1;  // the stormed egress direction (switch -> victim)
  std::string port;       // its name, "leaf0->node3.nic0"
  int priority = kLosslessPriority;
  double start_s = 0.0;     // when the queue was paused
  double detected_s = 0.0;  // when the watchdog declared the storm
};

// One port, named by its egress direction d = (a -> b): the port of vertex a on that cable.
struct PortPacketStats {
  int32_t resource = -1;
  std::string name;
  int64_t max_queue_bytes = 0;  // egress queue (all priorities), wire bytes
  uint64_t tx_packets = 0;
  uint64_t pause_frames_sent = 0;      // by a, about traffic b -> a (XOFF frames)
  uint64_t pause_frames_received = 0;  // by a, about its egress d
  double paused_time_s = 0.0;          // egress d stopped by pause, all priorities
  uint64_t dropped_packets = 0;        // dropped on admission to this egress queue
  uint64_t ecn_marked_packets = 0;     // marked at this egress queue
  // Time-averaged egress queue (all priorities, wire bytes) since the construction or the
  // last PacketNetwork::reset_queue_averages().
  double mean_queue_bytes = 0.0;
};

struct PacketStats {
  uint64_t packets_sent = 0;  // data packets injected, retransmissions included
  uint64_t packets_delivered = 0;
  uint64_t retransmitted_packets = 0;
  uint64_t ecn_marked_packets = 0;   // delivered with CE set
  double ecn_marked_fraction = 0.0;  // of delivered packets
  uint64_t cnps = 0;
  uint64_t pfc_pause_frames = 0;   // XOFF frames (storming NICs included)
  uint64_t pfc_resume_frames = 0;  // XON frames
  double pfc_paused_time_s = 0.0;  // summed over egress queues and priorities
  uint64_t dropped_packets = 0;
  uint64_t lossless_overflow_packets = 0;  // lossless packets admitted beyond the buffer size
  int64_t max_queue_bytes = 0;             // deepest egress queue seen
  std::vector<PfcStorm> pfc_storms;        // in detection order
  std::vector<PortPacketStats> ports;      // ports that carried a packet or saw a pause frame
  // Congestion spreading.
  std::vector<PauseEdge> pause_tree;     // in order of first pause
  int max_pause_hops = 0;                // deepest hop of any pause frame
  uint64_t paused_flows = 0;             // flows that waited behind a pause (done or not)
  uint64_t victim_flow_count = 0;        // of those, victims (see VictimFlow)
  double victim_paused_time_s = 0.0;     // summed over victims
  std::vector<VictimFlow> victim_flows;  // the first PacketParams::max_victim_flows victims
  // Cyclic buffer dependency: channel dependency graph of the fabric link directions used
  // consecutively by lossless flows (PFC on) since the start. A cycle can deadlock PFC.
  uint64_t dependency_edges = 0;
  bool buffer_dependency_cycle = false;
  std::vector<std::string> dependency_cycle;  // link directions of one cycle, in order
  std::vector<SwitchPacketStats> switches;    // switches that saw a packet
};

class PacketNetwork final : public Network, private sim::EventHandler {
 public:
  PacketNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params = {},
                PacketParams packet = {});

  void send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes, DeliveryHandler& handler,
                 uint64_t tag) override;
  // Approximation: every leg is an independent packet transfer of bytes_per_leg (no common
  // rate); delivered when the last leg's last packet arrives plus
  // max(0, fixed_latency - longest leg path latency).
  void send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg, sim::Duration fixed_latency,
                      double leg_rate_cap_bps, DeliveryHandler& handler, uint64_t tag) override;
  [[nodiscard]] sim::Duration path_latency(int src_gpu, int dst_gpu) const override;
  [[nodiscard]] sim::Bandwidth path_bandwidth(int src_gpu, int dst_gpu) const override;
  // New serializations use the new rate; a packet on the wire finishes at the old one.
  void set_resource_capacity(int32_t resource, sim::Bandwidth capacity) override;
  [[nodiscard]] LinkStats link_stats(int32_t resource) const override;
  [[nodiscard]] std::vector<LinkStats> top_links(size_t k) const override;
  [[nodiscard]] double max_link_utilization() const override;
  [[nodiscard]] const NetworkParams& params() const override { return params_; }
  [[nodiscard]] const Cluster& cluster() const override { return cluster_; }

  // send() on an explicit priority (kLossyPriority or kLosslessPriority).
  void send_on(int src_gpu, int dst_gpu, sim::Bytes bytes, DeliveryHandler& handler, uint64_t tag,
               int priority);
  // From `at`, NIC nic_id pauses the lossless priority of every link into it, for ever
  // (explicit XOFF, never an XON): its leaf's egress stops, and pauses spread upstream.
  void inject_pause_storm(int nic_id, sim::Time at);

  [[nodiscard]] const PacketParams& packet_params() const { return packet_; }
  [[nodiscard]] PacketStats packet_stats() const;
  [[nodiscard]] QueueSnapshot queue_snapshot() const;
  // PFC thresholds in force now at the ingress port at the end of link direction d (bytes),
  // and its headroom (mlx5 formula).
  [[nodiscard]] int64_t xoff_bytes(int32_t d) const;
  [[nodiscard]] int64_t xon_bytes(int32_t d) const;
  [[nodiscard]] int64_t headroom_bytes(int32_t d) const;
  // Wire bytes of a packet carrying `payload` bytes.
  [[nodiscard]] int64_t wire_bytes(int64_t payload) const;
  [[nodiscard]] uint64_t packets_sent() const { return packets_sent_; }
  // Most packets alive at once so far (the size of the packet pool).
  [[nodiscard]] size_t peak_packets() const { return packets_.size(); }
  // Restarts the time averages of the egress queues (PortPacketStats::mean_queue_bytes) now,
  // e.g. once congestion control has converged.
  void reset_queue_averages();
  // Memory of the packet pool and per-port / per-flow state (bytes).
  [[nodiscard]] static double memory_estimate(const Cluster& cluster, const PacketParams& params,
                                              int64_t flows, int64_t bytes);

 private:
  enum class Kind : uint8_t { host, inject, fabric_switch };
  enum EventKind : uint8_t { kSer, kPipe, kCtrl, kWatchdog, kCnp, kCut, kIncrease, kDone, kStorm };
  static constexpr uint32_t kNone = 0xffffffffU;

  static uint64_t event_tag(EventKind k, uint64_t index) { return uint64_t{k} << 56 | index; }

  struct Packet {
    uint32_t flow;
    uint32_t next;
    uint32_t payload;
    uint32_t wire;
    uint16_t hop;  // index in the flow's port path of the port holding the packet
    uint8_t priority;
    uint8_t ce;
    int64_t mark_ps;  // the holding port's paused clock when the packet was queued
  };
  struct Fifo {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };
  // A ring of (time, value) in arrival order: the propagation pipe of a port.
  struct Ring {
    struct Entry {
      int64_t at_ps;
      uint32_t value;
      uint32_t aux;
    };
    std::vector<Entry> buf;
    size_t head = 0;
    size_t size = 0;
    void push(int64_t at, uint32_t v, uint32_t aux = 0);
    void clear() { head = size = 0; }
    Entry pop();
    [[nodiscard]] const Entry& front() const { return buf[head]; }
  };
  struct Port {
    Port(sim::EventHandler* h, uint32_t id);
    sim::Timer ser;  // transmission complete (busy) or rate-limiter wake-up (inject)
    sim::Timer pipe_timer;
    sim::Timer ctrl_timer;
    sim::Timer watchdog;
    Kind kind = Kind::host;
    int32_t sw = -1;  // switch index of the port's vertex (fabric_switch only)
    double bps = 0.0;
    int64_t latency_ps = 0;
    int64_t ctrl_latency_ps = 0;  // pause frames to this port's transmitter
    bool busy = false;
    uint32_t tx = kNone;
    Fifo q[kPriorities];
    int64_t q_bytes[kPriorities] = {0, 0};
    bool paused[kPriorities] = {false, false};
    bool ignore_pause[kPriorities] = {false, false};
    int64_t paused_since_ps[kPriorities] = {0, 0};
    int64_t paused_ps[kPriorities] = {0, 0};
    // Congestion root and hop of the pause in force (valid while paused).
    uint32_t pause_root[kPriorities] = {kNone, kNone};
    uint16_t pause_hop[kPriorities] = {0, 0};
    uint32_t edge[kPriorities] = {kNone, kNone};  // index in edges_ of (this port, priority)
    bool is_root = false;                         // a congestion root of some pause
    // As an ingress port of the switch it enters.
    int64_t in_bytes[kPriorities] = {0, 0};
    bool xoff_sent[kPriorities] = {false, false};
    int64_t xoff = 0;  // static XOFF (0: dynamic threshold)
    int64_t xon = 0;
    int64_t headroom = 0;  // mlx5 headroom formula
    int32_t in_sw = -1;    // switch this direction enters (-1: a NIC)
    double pfc_alpha = 0.0;
    int64_t kmin = 0;  // ECN thresholds of this egress (EcnParams, or scaled with its speed)
    int64_t kmax = 0;
    Ring pipe;
    Ring ctrl;
    std::vector<uint32_t> flows;  // inject: flows with bytes to send
    size_t rr = 0;
    // Statistics.
    int64_t max_q = 0;
    uint64_t tx_packets = 0;
    double tx_bytes = 0.0;
    int64_t busy_ps = 0;
    uint64_t pause_on = 0;  // XOFF frames about this direction
    uint64_t drops = 0;
    uint64_t marks = 0;
    double q_area = 0.0;  // integral of the queue (bytes x ps) since q_avg_start_ps_
    int64_t q_last_ps = 0;
  };
  struct Flow {
    Flow(sim::EventHandler* h, uint32_t id);
    sim::Timer cnp_timer;  // head of cnp_pipe reaches the source
    sim::Timer cut_timer;  // next point of the DCQCN decrease clock (cut pending)
    sim::Timer increase_timer;
    Ring cnp_pipe;              // CNPs in flight back to the source, in arrival order
    std::vector<int32_t> path;  // ports: injection ... last
    uint32_t group = 0;
    uint8_t priority = kLosslessPriority;
    bool listed = false;  // in its injection port's flow list
    int64_t total = 0;
    int64_t unsent = 0;
    int64_t retx = 0;
    int64_t received = 0;
    int64_t next_send_ps = 0;
    int64_t last_cnp_ps = 0;
    bool cnp_sent = false;
    double line_bps = 0.0;
    double rate_bps = 0.0;
    int64_t reverse_latency_ps = 0;
    Dcqcn cc;
    bool active = false;
    int src_gpu = -1;
    int dst_gpu = -1;
    uint64_t tag = 0;
    int64_t paused_ps = 0;  // time its packets waited behind paused egresses
    int64_t mark_ps = 0;    // injection port's paused clock when last accounted
  };
  struct EdgeRecord {
    uint32_t paused;
    uint8_t priority;
    uint16_t hop;
    uint16_t max_hop;
    uint32_t root;
    int64_t first_ps;
    uint64_t frames;
  };
  struct Group {
    Group(sim::EventHandler* h, uint32_t id);
    sim::Timer done;
    DeliveryHandler* handler = nullptr;
    uint64_t tag = 0;
    int legs = 0;
    int64_t extra_ps = 0;
  };

  void on_event(uint64_t tag) override;
  void send_on_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes, DeliveryHandler& handler,
                    uint64_t tag, int priority);
  uint32_t new_group(DeliveryHandler& handler, uint64_t tag);
  // A connection's data as its queue pairs carry it (network.qps_per_connection): across NVLink
  // domains, min(q, bytes) flows of an equal share each, each on its queue pair's ECMP path
  // (path_uses.h queue_pair_flow), each with its own congestion control; else one flow.
  int connection_flows(int src_gpu, int dst_gpu, int64_t bytes) const;
  void start_connection(uint32_t group, int src_gpu, int dst_gpu, int64_t bytes, uint64_t flow_id,
                        int priority, double rate_cap_bps = std::numeric_limits<double>::infinity());
  void start_flow(uint32_t group, int src_gpu, int dst_gpu, int64_t bytes, uint64_t flow_id, int priority,
                  double rate_cap_bps = std::numeric_limits<double>::infinity());
  void leg_done(uint32_t group);

  uint32_t alloc_packet();
  void try_start(uint32_t port);
  void try_inject(uint32_t port);
  void start_tx(Port& p, uint32_t pkt);
  void tx_complete(uint32_t port);
  void arrive(uint32_t pkt);
  void enqueue(uint32_t port, uint32_t pkt);
  void drop(Port& p, uint32_t pkt);
  void receive(uint32_t pkt);
  void send_pause(uint32_t port, int priority, bool xoff, uint32_t root = kNone, uint32_t hop = 0);
  void pause_edge(uint32_t port, int priority, uint32_t root, uint32_t hop);
  [[nodiscard]] int64_t paused_clock(const Port& p, int priority, int64_t now) const {
    return p.paused_ps[priority] + (p.paused[priority] ? now - p.paused_since_ps[priority] : 0);
  }
  void queue_change(Port& p, int priority, int64_t delta);
  [[nodiscard]] int64_t xoff_now(const Port& ip) const;
  [[nodiscard]] int64_t xon_now(const Port& ip) const;
  void flow_done_analysis(const Flow& f);
  [[nodiscard]] bool is_victim(const Flow& f) const;
  void set_paused(uint32_t port, int priority, bool on);
  void on_watchdog(uint32_t port);
  void on_cnp(uint32_t flow);
  void on_cut(uint32_t flow);
  void on_increase(uint32_t flow);
  void list_flow(uint32_t flow);
  [[nodiscard]] bool ecn_mark(const Port& p, int64_t queue_bytes);

  sim::Simulation& sim_;
  const Cluster& cluster_;
  NetworkParams params_;
  PacketParams packet_;
  sim::Rng rng_;
  std::deque<Port> ports_;
  std::vector<int64_t> switch_used_;
  std::vector<Packet> packets_;
  std::vector<uint32_t> free_packets_;
  std::deque<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::deque<Group> groups_;
  std::vector<uint32_t> free_groups_;
  std::vector<int> storm_nics_;
  mutable std::vector<int32_t> path_;
  std::vector<PfcStorm> storms_;
  uint64_t packets_sent_ = 0;
  uint64_t packets_delivered_ = 0;
  uint64_t retransmitted_ = 0;
  uint64_t ce_delivered_ = 0;
  uint64_t cnps_ = 0;
  uint64_t pause_frames_ = 0;
  uint64_t resume_frames_ = 0;
  uint64_t drops_ = 0;
  uint64_t overflow_ = 0;
  // Analysis.
  std::vector<EdgeRecord> edges_;
  int max_hop_ = 0;
  uint64_t paused_flows_ = 0;
  uint64_t victims_ = 0;
  int64_t victim_ps_ = 0;
  std::vector<VictimFlow> victim_list_;
  std::unordered_set<uint64_t> dependencies_;  // (from link direction << 32) | to
  int64_t q_avg_start_ps_ = 0;
  std::vector<int64_t> sw_in_;
  std::vector<int64_t> sw_out_;
  std::vector<int64_t> sw_drop_;
};

}  // namespace ct::network

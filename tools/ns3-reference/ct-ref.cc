// ct-ref: drives the ns-3 RDMA model (HPCC SIGCOMM'19 model as carried by ns-3-alibabacloud)
// from a topology file, a flow list and a small key/value configuration, and prints the
// figures ClusterTwin compares against: per-flow completion times, CNP-flagged ACKs, PFC pause
// frames and paused time, and switch egress queue lengths (sampled).
//
// Written for ClusterTwin's side-by-side validation; lives only in a scratch folder.
//
// Usage: ct-ref <config> <topology> <flows> <out_prefix>
// topology: "<nodes> <switches> <links>" / switch ids / "<a> <b> <rate e.g. 100Gbps> <delay e.g. 1us>" per
// link flows:    "<n>" / "<src> <dst> <pg> <bytes> <start_seconds> [<after>]" per flow; `after` (0-based
//           index of an earlier flow) starts the flow start_seconds after that flow's last byte
//           reached its destination (dependency chains such as a ring all-reduce).
// Completion is taken both ways: when the sender gets the last ACK (the model's QpComplete) and
// when the last data byte reaches the receiving NIC (MacRx), the time a dependent flow starts.
#include <ns3/rdma-client-helper.h>
#include <ns3/rdma-client.h>
#include <ns3/rdma-driver.h>
#include <ns3/rdma.h>
#include <ns3/switch-node.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/custom-header.h"
#include "ns3/internet-module.h"
#include "ns3/qbb-helper.h"

using namespace ns3;

namespace {

std::map<std::string, std::string> g_cfg;
std::string cfg(const std::string& k, const std::string& d) {
  auto it = g_cfg.find(k);
  return it == g_cfg.end() ? d : it->second;
}
double cfgd(const std::string& k, double d) {
  auto it = g_cfg.find(k);
  return it == g_cfg.end() ? d : std::stod(it->second);
}

NodeContainer g_nodes;
std::vector<bool> g_is_switch;
std::map<uint32_t, std::map<uint32_t, std::vector<uint32_t>>>
    g_if;                                                  // node -> neighbour -> ifindexes (parallel links)
std::map<uint32_t, std::map<uint32_t, uint64_t>> g_delay;  // ns
std::map<uint32_t, std::map<uint32_t, uint64_t>> g_bw;     // bps
std::map<uint32_t, std::map<uint32_t, std::vector<uint32_t>>> g_next;  // node -> dst host -> next hops
FILE* g_fct = nullptr;
uint64_t g_cnp_acks = 0;
uint64_t g_flows_done = 0;
uint64_t g_pause_frames = 0;
uint64_t g_resume_frames = 0;
std::map<std::pair<uint32_t, uint32_t>, int64_t> g_pause_start;  // (node, if) -> ps
double g_paused_s = 0.0;
uint32_t g_payload = 1000;

struct FlowRec {
  uint32_t src, dst, pg;
  uint64_t bytes;
  double start;
  int64_t after;
  uint16_t sport;
  double started = -1.0;
  double rx_done = -1.0;
  uint64_t rx_hi = 0;
  std::vector<size_t> dependents;
};
std::vector<FlowRec> g_flows;
std::map<std::tuple<uint32_t, uint32_t, uint16_t>, size_t> g_flow_of;  // (src, dst, sport)

Ipv4Address ip_of(uint32_t id) {
  return Ipv4Address(0x0b000001 + ((id / 256) * 0x00010000) + ((id % 256) * 0x00000100));
}

void on_pfc(uint32_t node, uint32_t ifidx, uint32_t type) {
  const auto key = std::make_pair(node, ifidx);
  const int64_t now = Simulator::Now().GetPicoSeconds();
  if (type == 1) {
    ++g_pause_frames;
    if (!g_pause_start.count(key)) g_pause_start[key] = now;
  } else {
    ++g_resume_frames;
    auto it = g_pause_start.find(key);
    if (it != g_pause_start.end()) {
      g_paused_s += (now - it->second) * 1e-12;
      g_pause_start.erase(it);
    }
  }
}

void on_qp_complete(Ptr<RdmaDriver> drv, Ptr<RdmaQueuePair> q) {
  const uint64_t key = RdmaHw::GetQpKey(q->dip.Get(), q->sport, q->m_pg);
  const uint32_t cnps = drv->m_rdma->qp_cnp[key];
  g_cnp_acks += cnps;
  ++g_flows_done;
  const double fct = (Simulator::Now() - q->startTime).GetSeconds();
  const auto it = g_flow_of.find({q->m_src, q->m_dest, q->sport});
  const FlowRec* f = it == g_flow_of.end() ? nullptr : &g_flows[it->second];
  const double rx_fct = f != nullptr && f->rx_done >= 0 ? f->rx_done - q->startTime.GetSeconds() : -1.0;
  std::fprintf(g_fct, "%u %u %lu %.9f %.9f %u %.9f %ld\n", q->m_src, q->m_dest, (unsigned long)q->m_size,
               q->startTime.GetSeconds(), fct, cnps, rx_fct, f != nullptr ? (long)(f - g_flows.data()) : -1L);
}

void start_flow(size_t i, double delay);

// Every packet a host NIC receives: data packets advance their flow's received bytes.
void on_host_rx(uint32_t node, Ptr<const Packet> p) {
  CustomHeader ch(CustomHeader::L2_Header | CustomHeader::L3_Header | CustomHeader::L4_Header);
  p->PeekHeader(ch);
  if (ch.l3Prot != 0x11) return;
  const uint32_t src = (ch.sip >> 8) & 0xffff;
  const auto it = g_flow_of.find({src, node, ch.udp.sport});
  if (it == g_flow_of.end()) return;
  FlowRec& f = g_flows[it->second];
  const uint64_t payload = p->GetSize() - ch.GetSerializedSize();
  f.rx_hi = std::max<uint64_t>(f.rx_hi, ch.udp.seq + payload);
  if (f.rx_done < 0 && f.rx_hi >= f.bytes) {
    f.rx_done = Simulator::Now().GetSeconds();
    for (const size_t d : f.dependents) start_flow(d, g_flows[d].start);
  }
}

struct QueueStat {
  uint64_t max_bytes = 0;
  double sum_bytes = 0.0;
  uint64_t samples = 0;
};
std::map<std::pair<uint32_t, uint32_t>, QueueStat> g_q;  // (switch, port) egress, data priority
uint32_t g_data_pg = 3;
double g_sample_us = 1.0;
double g_last_done_check = 0;

void sample_queues() {
  for (uint32_t i = 0; i < g_nodes.GetN(); ++i) {
    if (!g_is_switch[i]) continue;
    Ptr<SwitchNode> sw = DynamicCast<SwitchNode>(g_nodes.Get(i));
    for (uint32_t j = 1; j < sw->GetNDevices(); ++j) {
      const uint64_t b = sw->m_mmu->egress_bytes[j][g_data_pg];
      auto& s = g_q[{i, j}];
      s.max_bytes = std::max(s.max_bytes, b);
      s.sum_bytes += static_cast<double>(b);
      ++s.samples;
    }
  }
  Simulator::Schedule(MicroSeconds(g_sample_us), &sample_queues);
}

uint64_t g_expected_flows = 0;
void check_done() {
  if (g_flows_done >= g_expected_flows) {
    Simulator::Stop();
    return;
  }
  Simulator::Schedule(MicroSeconds(10), &check_done);
}

void start_flow(size_t i, double delay) {
  FlowRec& f = g_flows[i];
  f.started = Simulator::Now().GetSeconds() + delay;
  RdmaClientHelper helper(f.pg, ip_of(f.src), ip_of(f.dst), f.sport, 100, f.bytes, 0, 0, nullptr, nullptr, 0,
                          f.src, f.dst);
  ApplicationContainer app = helper.Install(g_nodes.Get(f.src));
  app.Start(Seconds(delay));  // relative to now (the application is initialised now)
}

void routes_from(uint32_t host) {
  // BFS from host; every node learns its next hops towards host (all shortest paths: ECMP).
  std::map<uint32_t, int> dist;
  std::vector<uint32_t> q{host};
  dist[host] = 0;
  for (size_t k = 0; k < q.size(); ++k) {
    const uint32_t now = q[k];
    for (auto& [nb, ifs] : g_if[now]) {
      (void)ifs;
      if (!dist.count(nb)) {
        dist[nb] = dist[now] + 1;
        if (g_is_switch[nb]) q.push_back(nb);
      }
      if (dist[nb] == dist[now] + 1) g_next[nb][host].push_back(now);
    }
  }
}

// Simulator-wide settings from the key/value configuration.
void configure_globals() {
  RngSeedManager::SetRun(static_cast<uint64_t>(cfgd("RNG_RUN", 1)));
  g_payload = static_cast<uint32_t>(cfgd("PACKET_PAYLOAD_SIZE", 1000));
  const bool ecn = cfgd("ENABLE_QCN", 1) != 0;
  const bool pfc_dyn = cfgd("USE_DYNAMIC_PFC_THRESHOLD", 1) != 0;
  g_sample_us = cfgd("QLEN_SAMPLE_US", 1.0);
  Config::SetDefault("ns3::QbbNetDevice::PauseTime",
                     UintegerValue(static_cast<uint32_t>(cfgd("PAUSE_TIME", 5))));
  Config::SetDefault("ns3::QbbNetDevice::QcnEnabled", BooleanValue(ecn));
  Config::SetDefault("ns3::QbbNetDevice::DynamicThreshold", BooleanValue(pfc_dyn));
  IntHeader::mode = IntHeader::NONE;
  RdmaEgressQueue::ack_q_idx = cfgd("ACK_HIGH_PRIO", 1) != 0 ? 0 : 3;
}

// Nodes, switches and links from the topology file; returns the node count.
uint32_t build_topology(const char* path) {
  const bool ecn = cfgd("ENABLE_QCN", 1) != 0;
  std::ifstream topo(path);
  uint32_t n_nodes = 0, n_switches = 0, n_links = 0;
  topo >> n_nodes >> n_switches >> n_links;
  g_is_switch.assign(n_nodes, false);
  for (uint32_t i = 0; i < n_switches; ++i) {
    uint32_t s;
    topo >> s;
    g_is_switch[s] = true;
  }
  for (uint32_t i = 0; i < n_nodes; ++i) {
    if (g_is_switch[i]) {
      Ptr<SwitchNode> sw = CreateObject<SwitchNode>();
      sw->SetAttribute("EcnEnabled", BooleanValue(ecn));
      g_nodes.Add(sw);
    } else {
      g_nodes.Add(CreateObject<Node>());
    }
  }
  InternetStackHelper internet;
  internet.Install(g_nodes);

  QbbHelper qbb;
  Ipv4AddressHelper ipv4;
  for (uint32_t i = 0; i < n_links; ++i) {
    uint32_t a, b;
    std::string rate, delay;
    topo >> a >> b >> rate >> delay;
    qbb.SetDeviceAttribute("DataRate", StringValue(rate));
    qbb.SetChannelAttribute("Delay", StringValue(delay));
    NetDeviceContainer d = qbb.Install(g_nodes.Get(a), g_nodes.Get(b));
    for (int side = 0; side < 2; ++side) {
      const uint32_t me = side == 0 ? a : b, other = side == 0 ? b : a;
      Ptr<QbbNetDevice> dev = DynamicCast<QbbNetDevice>(d.Get(side));
      if (!g_is_switch[me]) {
        Ptr<Ipv4> ip = g_nodes.Get(me)->GetObject<Ipv4>();
        ip->AddInterface(dev);
        ip->AddAddress(1, Ipv4InterfaceAddress(ip_of(me), Ipv4Mask(0xff000000)));
      }
      g_if[me][other].push_back(dev->GetIfIndex());
      g_delay[me][other] = DynamicCast<QbbChannel>(dev->GetChannel())->GetDelay().GetNanoSeconds();
      g_bw[me][other] = dev->GetDataRate().GetBitRate();
      dev->TraceConnectWithoutContext("QbbPfc", MakeBoundCallback(&on_pfc, me, dev->GetIfIndex()));
    }
    char base[32];
    std::snprintf(base, sizeof base, "10.%u.%u.0", i / 254 + 1, i % 254 + 1);
    ipv4.SetBase(base, "255.255.255.0");
    ipv4.Assign(d);
  }
  return n_nodes;
}

// Switch buffers: ECN thresholds scaled with each port's rate, PFC headroom and dynamic
// threshold shift, buffer size and congestion-control mode.
void configure_switches(uint32_t n_nodes) {
  const uint32_t cc_mode = static_cast<uint32_t>(cfgd("CC_MODE", 1));
  const double kmin_kb = cfgd("KMIN_KB", 100), kmax_kb = cfgd("KMAX_KB", 400), pmax = cfgd("PMAX", 0.2);
  const uint32_t buffer_mb = static_cast<uint32_t>(cfgd("BUFFER_MB", 32));
  uint64_t nic_rate = 0;
  for (uint32_t i = 0; i < n_nodes; ++i)
    if (!g_is_switch[i]) {
      nic_rate = DynamicCast<QbbNetDevice>(g_nodes.Get(i)->GetDevice(1))->GetDataRate().GetBitRate();
      break;
    }
  for (uint32_t i = 0; i < n_nodes; ++i) {
    if (!g_is_switch[i]) continue;
    Ptr<SwitchNode> sw = DynamicCast<SwitchNode>(g_nodes.Get(i));
    for (uint32_t j = 1; j < sw->GetNDevices(); ++j) {
      Ptr<QbbNetDevice> dev = DynamicCast<QbbNetDevice>(sw->GetDevice(j));
      uint64_t rate = dev->GetDataRate().GetBitRate();
      // ECN thresholds given for the NIC rate, scaled with the port rate (as the HPCC run.py maps).
      const double scale = static_cast<double>(rate) / static_cast<double>(nic_rate);
      sw->m_mmu->ConfigEcn(j, static_cast<uint32_t>(kmin_kb * scale), static_cast<uint32_t>(kmax_kb * scale),
                           pmax);
      const uint64_t delay_ns = DynamicCast<QbbChannel>(dev->GetChannel())->GetDelay().GetNanoSeconds();
      sw->m_mmu->ConfigHdrm(j, static_cast<uint32_t>(rate * delay_ns / 8 / 1000000000 * 3));
      uint32_t shift = 3;
      while (rate > nic_rate && shift > 0) {
        --shift;
        rate /= 2;
      }
      sw->m_mmu->pfc_a_shift[j] = shift;
    }
    sw->m_mmu->ConfigNPort(sw->GetNDevices() - 1);
    sw->m_mmu->ConfigBufferSize(buffer_mb * 1024 * 1024);
    sw->m_mmu->node_id = sw->GetId();
    sw->SetAttribute("CcMode", UintegerValue(cc_mode));
    // ACKs (and the CNP flag they carry) on the highest priority at switches too, as HPCC's
    // third.cc sets it from ACK_HIGH_PRIO.
    sw->SetAttribute("AckHighPrio", UintegerValue(cfgd("ACK_HIGH_PRIO", 1) != 0 ? 1 : 0));
  }
}

// One RDMA NIC (DCQCN parameters from the configuration) per host.
std::vector<Ptr<RdmaDriver>> install_rdma(uint32_t n_nodes) {
  const uint32_t cc_mode = static_cast<uint32_t>(cfgd("CC_MODE", 1));
  std::vector<Ptr<RdmaDriver>> drivers(n_nodes);
  for (uint32_t i = 0; i < n_nodes; ++i) {
    if (g_is_switch[i]) continue;
    Ptr<RdmaHw> hw = CreateObject<RdmaHw>();
    hw->SetAttribute("ClampTargetRate", BooleanValue(cfgd("CLAMP_TARGET_RATE", 0) != 0));
    hw->SetAttribute("AlphaResumInterval", DoubleValue(cfgd("ALPHA_RESUME_INTERVAL", 1)));
    hw->SetAttribute("RPTimer", DoubleValue(cfgd("RP_TIMER", 300)));
    hw->SetAttribute("FastRecoveryTimes",
                     UintegerValue(static_cast<uint32_t>(cfgd("FAST_RECOVERY_TIMES", 1))));
    hw->SetAttribute("EwmaGain", DoubleValue(cfgd("EWMA_GAIN", 1.0 / 256)));
    hw->SetAttribute("RateAI", DataRateValue(DataRate(cfg("RATE_AI", "20Mb/s"))));
    hw->SetAttribute("RateHAI", DataRateValue(DataRate(cfg("RATE_HAI", "200Mb/s"))));
    hw->SetAttribute("L2BackToZero", BooleanValue(false));
    hw->SetAttribute("L2ChunkSize", UintegerValue(static_cast<uint32_t>(cfgd("L2_CHUNK_SIZE", 4000))));
    hw->SetAttribute("L2AckInterval", UintegerValue(static_cast<uint32_t>(cfgd("L2_ACK_INTERVAL", 1))));
    hw->SetAttribute("CcMode", UintegerValue(cc_mode));
    hw->SetAttribute("RateDecreaseInterval", DoubleValue(cfgd("RATE_DECREASE_INTERVAL", 4)));
    hw->SetAttribute("MinRate", DataRateValue(DataRate(cfg("MIN_RATE", "100Mb/s"))));
    hw->SetAttribute("Mtu", UintegerValue(g_payload));
    hw->SetAttribute("VarWin", BooleanValue(false));
    hw->SetAttribute("RateBound", BooleanValue(true));
    hw->SetAttribute("GPUsPerServer", UintegerValue(1));
    Ptr<RdmaDriver> drv = CreateObject<RdmaDriver>();
    Ptr<Node> node = g_nodes.Get(i);
    drv->SetNode(node);
    drv->SetRdmaHw(hw);
    node->AggregateObject(drv);
    drv->Init();
    drv->TraceConnectWithoutContext("QpComplete", MakeBoundCallback(&on_qp_complete, drv));
    drivers[i] = drv;
  }
  return drivers;
}

// Shortest-path ECMP routes to every host, on switches and NICs.
void install_routes(uint32_t n_nodes, const std::vector<Ptr<RdmaDriver>>& drivers) {
  for (uint32_t i = 0; i < n_nodes; ++i)
    if (!g_is_switch[i]) routes_from(i);
  for (auto& [node, table] : g_next) {
    for (auto& [dst, hops] : table) {
      Ipv4Address addr = ip_of(dst);
      for (uint32_t h : hops) {
        for (const uint32_t ifidx : g_if[node][h]) {
          if (g_is_switch[node])
            DynamicCast<SwitchNode>(g_nodes.Get(node))->AddTableEntry(addr, ifidx);
          else
            drivers[node]->m_rdma->AddTableEntry(addr, ifidx, false);
        }
      }
    }
  }
}

// The flow list; flows without a predecessor start at their time, the others when it lands.
// Returns the flow count.
uint32_t start_flows(const char* path, uint32_t n_nodes) {
  std::ifstream flows(path);
  uint32_t n_flows = 0;
  flows >> n_flows;
  g_expected_flows = n_flows;
  std::map<std::pair<uint32_t, uint32_t>, uint16_t> ports;
  std::string line;
  std::getline(flows, line);
  for (uint32_t i = 0; i < n_flows; ++i) {
    std::getline(flows, line);
    std::istringstream row(line);
    FlowRec f{};
    f.after = -1;
    row >> f.src >> f.dst >> f.pg >> f.bytes >> f.start;
    int64_t after = -1;
    if (row >> after) f.after = after;
    g_data_pg = f.pg;
    f.sport = static_cast<uint16_t>(10000 + ports[{f.src, f.dst}]++);
    g_flow_of[{f.src, f.dst, f.sport}] = g_flows.size();
    if (f.after >= 0) g_flows[static_cast<size_t>(f.after)].dependents.push_back(g_flows.size());
    g_flows.push_back(f);
  }
  for (size_t i = 0; i < g_flows.size(); ++i) {
    if (g_flows[i].after < 0) start_flow(i, g_flows[i].start);
  }
  for (uint32_t i = 0; i < n_nodes; ++i) {
    if (g_is_switch[i]) continue;
    Ptr<Node> node = g_nodes.Get(i);
    for (uint32_t d = 1; d < node->GetNDevices(); ++d) {
      node->GetDevice(d)->TraceConnectWithoutContext("MacRx", MakeBoundCallback(&on_host_rx, i));
    }
  }
  return n_flows;
}

void write_summary(const std::string& prefix, uint32_t n_flows, double end_s) {
  FILE* sum = std::fopen((prefix + ".summary").c_str(), "w");
  std::fprintf(sum,
               "flows_done %lu\nflows %lu\nend_s %.9f\ncnp_acks %lu\npause_frames %lu\nresume_frames "
               "%lu\npaused_s %.9f\n",
               (unsigned long)g_flows_done, (unsigned long)n_flows, end_s, (unsigned long)g_cnp_acks,
               (unsigned long)g_pause_frames, (unsigned long)g_resume_frames, g_paused_s);
  for (auto& [k, s] : g_q) {
    if (s.max_bytes == 0) continue;
    std::fprintf(sum, "queue %u %u max_bytes %lu mean_bytes %.1f\n", k.first, k.second,
                 (unsigned long)s.max_bytes, s.samples ? s.sum_bytes / s.samples : 0.0);
  }
  std::fclose(sum);
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: ct-ref <config> <topology> <flows> <out_prefix>\n");
    return 2;
  }
  {
    std::ifstream in(argv[1]);
    std::string k, v;
    while (in >> k >> v) g_cfg[k] = v;
  }
  configure_globals();
  const uint32_t n_nodes = build_topology(argv[2]);
  configure_switches(n_nodes);
  g_fct = std::fopen((std::string(argv[4]) + ".fct").c_str(), "w");
  const std::vector<Ptr<RdmaDriver>> drivers = install_rdma(n_nodes);
  install_routes(n_nodes, drivers);
  const uint32_t n_flows = start_flows(argv[3], n_nodes);
  Simulator::Schedule(MicroSeconds(g_sample_us), &sample_queues);
  Simulator::Schedule(MicroSeconds(10), &check_done);
  Simulator::Stop(Seconds(cfgd("STOP_S", 1.0)));
  try {
    Simulator::Run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 3;
  } catch (...) {
    std::fprintf(stderr, "unknown exception\n");
    return 3;
  }
  const double end_s = Simulator::Now().GetSeconds();
  for (auto& [k, t] : g_pause_start) g_paused_s += (Simulator::Now().GetPicoSeconds() - t) * 1e-12;
  std::fclose(g_fct);

  write_summary(argv[4], n_flows, end_s);
  Simulator::Destroy();
  return 0;
}

#include "models/scenario/traffic_run.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "models/collective/collective.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/packet_network.h"
#include "models/scenario/loader.h"
#include "models/scenario/machine_memory.h"
#include "models/scenario/model_configs.h"
#include "sim/simulation.h"
#include "sim/stats.h"

namespace ct::scenario {
namespace {

struct Recorder final : network::DeliveryHandler, collective::CompletionHandler {
  sim::Simulation* sim = nullptr;
  std::vector<double> done_s;
  void on_delivered(uint64_t) override { done_s.push_back(sim->now().seconds()); }
  void on_complete(uint64_t) override { done_s.push_back(sim->now().seconds()); }
};

// Packet mode: samples PacketNetwork::queue_snapshot() every `every` while flows are still
// outstanding and other events are pending (so it never keeps the simulation alive by
// itself). The series are sim::TimeSeries: bounded, pairs averaged when they fill up.
class QueueSampler final : public sim::EventHandler {
 public:
  QueueSampler(sim::Simulation& sim, const network::PacketNetwork& net, const Recorder& rec, sim::Duration every)
      : sim_(sim), net_(net), rec_(rec), every_(every) {}
  void start(size_t expected_flows) {
    expected_ = expected_flows;
    sim_.schedule_in(sim::Duration::zero(), *this, 0);
  }
  void on_event(uint64_t) override {
    const network::QueueSnapshot s = net_.queue_snapshot();
    queued_.record(sim_.now(), static_cast<double>(s.queued_bytes));
    deepest_.record(sim_.now(), static_cast<double>(s.max_queue_bytes));
    paused_.record(sim_.now(), s.paused_queues);
    if (rec_.done_s.size() < expected_ && sim_.pending() > 0) sim_.schedule_in(every_, *this, 0);
  }
  [[nodiscard]] nlohmann::json table() const {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < queued_.times_s().size(); ++i) {
      rows.push_back({{"t_s", queued_.times_s()[i]},
                      {"queued_bytes", queued_.values()[i]},
                      {"max_queue_bytes", deepest_.values()[i]},
                      {"paused_queues", paused_.values()[i]}});
    }
    return rows;
  }

 private:
  sim::Simulation& sim_;
  const network::PacketNetwork& net_;
  const Recorder& rec_;
  sim::Duration every_;
  size_t expected_ = 0;
  sim::TimeSeries queued_{2048}, deepest_{2048}, paused_{2048};
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

nlohmann::json packet_report(const network::PacketStats& p) {
  nlohmann::json storms = nlohmann::json::array();
  for (const auto& s : p.pfc_storms) {
    storms.push_back({{"port", s.port}, {"start_s", s.start_s}, {"detected_s", s.detected_s}});
  }
  nlohmann::json tree = nlohmann::json::array();
  for (const auto& e : p.pause_tree) {
    if (tree.size() >= 200) break;
    tree.push_back({{"paused", e.paused_name}, {"by", e.pausing_name}, {"first_s", e.first_s}, {"hop", e.hop},
                    {"root", e.root_name}, {"frames", e.frames}});
  }
  nlohmann::json victims = nlohmann::json::array();
  for (const auto& v : p.victim_flows) {
    if (victims.size() >= 100) break;
    victims.push_back({{"src_gpu", v.src_gpu}, {"dst_gpu", v.dst_gpu}, {"paused_s", v.paused_s}});
  }
  return {{"ecn_marked_fraction", p.ecn_marked_fraction},
          {"pfc_pause_frames", p.pfc_pause_frames},
          {"pfc_paused_time_s", p.pfc_paused_time_s},
          {"dropped_packets", p.dropped_packets},
          {"pfc_storms", storms},
          {"cnps", p.cnps},
          {"max_queue_bytes", p.max_queue_bytes},
          {"packets_delivered", p.packets_delivered},
          {"pause_tree", tree},
          {"max_pause_hops", p.max_pause_hops},
          {"victim_flows", p.victim_flow_count},
          {"victim_paused_time_s", p.victim_paused_time_s},
          {"victims", victims},
          {"buffer_dependency_cycle", p.buffer_dependency_cycle}};
}

}  // namespace

uint64_t run_traffic(const Config& c, nlohmann::json& report, network::FabricLinkTable* fabric_links) {
  const network::Cluster cluster(cluster_spec(c));
  sim::Simulation sim(static_cast<uint64_t>(c.seed));
  std::unique_ptr<network::Network> net;
  network::PacketNetwork* packet = nullptr;
  if (c.network.mode == "packet") {
    const auto& t = c.traffic;
    const int64_t n = static_cast<int64_t>(t.nodes > 0 ? t.nodes : c.cluster.nodes) * c.cluster.gpus_per_node;
    const int64_t flows = t.pattern == "incast" ? t.fan_in : t.pattern == "all_to_all" ? n * (n - 1) : n;
    try {
      const double have = available_memory_bytes();
      network::check_packet_memory(cluster, packet_params(c), flows, flows * std::max<int64_t>(1, t.size.n),
                                   have > 0 ? 0.8 * have : 1e18);
    } catch (const std::invalid_argument& e) {
      throw ScenarioError({e.what()});
    }
    auto p = std::make_unique<network::PacketNetwork>(sim, cluster, network_params(c), packet_params(c));
    packet = p.get();
    for (const auto& f : c.faults) {
      if (f.kind == "pause_storm") {
        packet->inject_pause_storm(f.node * c.cluster.nics_per_node + std::max(0, f.nic), sim::Time::zero() + f.at);
      }
    }
    net = std::move(p);
  } else {
    net = network::make_network(c.network.mode, sim, cluster, network_params(c));
  }
  Recorder rec;
  rec.sim = &sim;
  std::unique_ptr<QueueSampler> sampler;
  if (packet != nullptr && c.network.sample_interval > sim::Duration::zero()) {
    sampler = std::make_unique<QueueSampler>(sim, *packet, rec, c.network.sample_interval);
  }
  const auto& t = c.traffic;
  const int gpn = c.cluster.gpus_per_node;
  const int nodes = t.nodes > 0 ? t.nodes : c.cluster.nodes;
  const int n = nodes * gpn;
  double payload = 0;
  uint64_t flow = 0;
  auto send = [&](int src, int dst, int64_t bytes) {
    net->send(src, dst, sim::Bytes{bytes}, rec, flow++);
    payload += static_cast<double>(bytes);
  };
  if (t.pattern == "incast") {
    if (t.fan_in >= c.cluster.nodes) {
      throw ScenarioError({"traffic.fan_in: got " + std::to_string(t.fan_in) + ", expected below cluster.nodes = " +
                           std::to_string(c.cluster.nodes)});
    }
    for (int s = 1; s <= t.fan_in; ++s) send(s * gpn, 0, t.size.n);
  } else if (t.pattern == "permutation") {
    std::vector<int> dst(static_cast<size_t>(n));
    std::iota(dst.begin(), dst.end(), 0);
    sim::Rng rng = sim.rng(0x7065726d);
    for (size_t i = dst.size() - 1; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    for (int g = 0; g < n; ++g) {
      const int d = dst[static_cast<size_t>(g)] == g ? dst[static_cast<size_t>((g + 1) % n)] : dst[static_cast<size_t>(g)];
      if (d != g) send(g, d, t.size.n);
    }
  } else if (t.pattern == "all_to_all") {
    if (n > 4096) {
      throw ScenarioError({"traffic.nodes: all_to_all over " + std::to_string(n) +
                           " GPUs needs n^2 flows; expected at most 4096 GPUs (set traffic.nodes)"});
    }
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a != b) send(a, b, std::max<int64_t>(1, t.size.n / n));
      }
    }
  } else {
    collective::CollectiveEngine engine(sim, *net, cluster, collective_params(c));
    std::vector<int> group(static_cast<size_t>(n));
    std::iota(group.begin(), group.end(), 0);
    const collective::Op op = collective::parse_op(t.op);
    engine.start(op, group, t.size, rec, 0);
    if (sampler) sampler->start(1);
    sim.run();
    const double time = rec.done_s.at(0);
    const double algbw = t.size.as_double() / time;
    report["traffic"] = {{"completion_time_s", time},
                         {"flows", 1},
                         {"fct_p50_s", time},
                         {"fct_p99_s", time},
                         {"goodput_gbps", algbw * 8e-9},
                         {"algbw_GBps", algbw * 1e-9},
                         {"busbw_GBps", algbw * collective::bus_factor(op, n) * 1e-9}};
    report["network"] = {{"max_link_utilization", net->max_link_utilization()}};
    if (packet != nullptr) report["network"].update(packet_report(packet->packet_stats()));
    if (sampler) report["tables"] = {{"queues", sampler->table()}};
    if (fabric_links != nullptr) *fabric_links = network::fabric_link_table(cluster, *net);
    return sim.events_executed();
  }
  if (sampler) sampler->start(flow);
  sim.run();
  const double completion = rec.done_s.empty() ? 0.0 : *std::max_element(rec.done_s.begin(), rec.done_s.end());
  report["traffic"] = {{"completion_time_s", completion},
                       {"flows", rec.done_s.size()},
                       {"fct_p50_s", rec.done_s.empty() ? 0.0 : quantile(rec.done_s, 0.5)},
                       {"fct_p99_s", rec.done_s.empty() ? 0.0 : quantile(rec.done_s, 0.99)},
                       {"goodput_gbps", completion > 0 ? payload * 8e-9 / completion : 0.0}};
  report["network"] = {{"max_link_utilization", net->max_link_utilization()}};
  if (packet != nullptr) report["network"].update(packet_report(packet->packet_stats()));
  if (sampler) report["tables"] = {{"queues", sampler->table()}};
  if (fabric_links != nullptr) *fabric_links = network::fabric_link_table(cluster, *net);
  return sim.events_executed();
}

}  // namespace ct::scenario

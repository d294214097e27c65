#include "models/scenario/traffic_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
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
#include "models/scenario/traffic_flows.h"
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
  QueueSampler(sim::Simulation& sim, const network::PacketNetwork& net, const Recorder& rec,
               sim::Duration every)
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

}  // namespace

nlohmann::json packet_report(const network::PacketStats& p) {
  nlohmann::json storms = nlohmann::json::array();
  for (const auto& s : p.pfc_storms) {
    storms.push_back({{"port", s.port}, {"start_s", s.start_s}, {"detected_s", s.detected_s}});
  }
  nlohmann::json tree = nlohmann::json::array();
  for (const auto& e : p.pause_tree) {
    if (tree.size() >= 200) break;
    tree.push_back({{"paused", e.paused_name},
                    {"by", e.pausing_name},
                    {"first_s", e.first_s},
                    {"hop", e.hop},
                    {"root", e.root_name},
                    {"frames", e.frames}});
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

namespace {

// Starts the flows of a study at their start times and records when each completes.
class FlowDriver final : public sim::EventHandler, public network::DeliveryHandler {
 public:
  FlowDriver(sim::Simulation& sim, network::Network& net, const std::vector<FlowSpec>& flows, Recorder& rec)
      : sim_(sim),
        net_(net),
        flows_(flows),
        rec_(rec),
        done_s_(flows.size(), -1.0),
        start_s_(flows.size(), 0.0),
        next_(flows.size(), -1),
        first_(flows.size(), -1) {
    // Dependents of each flow as linked lists (after -> dependents), in file order.
    std::vector<int64_t> last(flows.size(), -1);
    for (size_t i = 0; i < flows_.size(); ++i) {
      const int64_t a = flows_[i].after;
      if (a < 0) continue;
      const auto au = static_cast<size_t>(a);
      if (last[au] < 0) {
        first_[au] = static_cast<int64_t>(i);
      } else {
        next_[static_cast<size_t>(last[au])] = static_cast<int64_t>(i);
      }
      last[au] = static_cast<int64_t>(i);
    }
  }
  void start() {
    for (size_t i = 0; i < flows_.size(); ++i) {
      if (flows_[i].after >= 0) continue;
      if (flows_[i].start_s <= 0.0) {
        send(i);
      } else {
        sim_.schedule_at(sim::Time::zero() + sim::Duration::from_seconds(flows_[i].start_s), *this, i);
      }
    }
  }
  void on_event(uint64_t i) override { send(static_cast<size_t>(i)); }
  void on_delivered(uint64_t i) override {
    done_s_[static_cast<size_t>(i)] = sim_.now().seconds();
    rec_.on_delivered(i);
    for (int64_t d = first_[static_cast<size_t>(i)]; d >= 0; d = next_[static_cast<size_t>(d)]) {
      const FlowSpec& f = flows_[static_cast<size_t>(d)];
      if (f.start_s <= 0.0) {
        send(static_cast<size_t>(d));
      } else {
        sim_.schedule_in(sim::Duration::from_seconds(f.start_s), *this, static_cast<uint64_t>(d));
      }
    }
  }
  [[nodiscard]] const std::vector<double>& done_s() const { return done_s_; }
  // When each flow started (absolute; a dependent flow's start follows its dependency).
  [[nodiscard]] const std::vector<double>& start_s() const { return start_s_; }

 private:
  void send(size_t i) {
    const FlowSpec& f = flows_[i];
    start_s_[i] = sim_.now().seconds();
    net_.send(f.src, f.dst, sim::Bytes{f.bytes}, *this, i);
  }
  sim::Simulation& sim_;
  network::Network& net_;
  const std::vector<FlowSpec>& flows_;
  Recorder& rec_;
  std::vector<double> done_s_;
  std::vector<double> start_s_;
  std::vector<int64_t> next_;
  std::vector<int64_t> first_;
};

// Flows below this size are "short" (the DCTCP and HPCC papers' query / short-flow class).
constexpr int64_t kShortFlowBytes = 100'000;
constexpr size_t kMaxListedFlows = 100'000;

// report["traffic"] of a flow study: completion, FCT percentiles, goodput over the span from
// the first start to the last delivery, short flows' FCT and slowdown, long flows' throughput.
nlohmann::json flow_figures(const std::vector<FlowSpec>& flows, const FlowDriver& driver,
                            const network::Network& net) {
  double payload = 0.0;
  double first_start = std::numeric_limits<double>::infinity();
  double completion = 0.0;
  std::vector<double> fct;
  std::vector<double> short_fct;
  std::vector<double> short_slowdown;
  std::vector<double> long_gbps;
  // Long flows: the background incast's when there is one, else every flow of 1 MB or more.
  const bool has_background =
      std::any_of(flows.begin(), flows.end(), [](const FlowSpec& f) { return f.background; });
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    const double done = driver.done_s()[i];
    if (done < 0.0) continue;
    const double started = driver.start_s()[i];
    payload += static_cast<double>(f.bytes);
    first_start = std::min(first_start, started);
    completion = std::max(completion, done);
    const double d = done - started;
    fct.push_back(d);
    if (f.bytes < kShortFlowBytes && !f.background) {
      short_fct.push_back(d);
      const double ideal = net.path_latency(f.src, f.dst).seconds() +
                           static_cast<double>(f.bytes) * 8.0 / net.path_bandwidth(f.src, f.dst).bps();
      short_slowdown.push_back(d / ideal);
    }
    if (has_background ? f.background : f.bytes >= 10 * kShortFlowBytes)
      long_gbps.push_back(static_cast<double>(f.bytes) * 8e-9 / d);
  }
  if (!std::isfinite(first_start)) first_start = 0.0;
  const double span = completion - first_start;
  nlohmann::json tr = {{"completion_time_s", completion},
                       {"flows", fct.size()},
                       {"fct_p50_s", fct.empty() ? 0.0 : sim::nearest_rank_quantile(fct, 0.5)},
                       {"fct_p99_s", fct.empty() ? 0.0 : sim::nearest_rank_quantile(fct, 0.99)},
                       {"goodput_gbps", span > 0 ? payload * 8e-9 / span : 0.0}};
  if (!short_fct.empty()) {
    tr["short_flows"] = short_fct.size();
    tr["short_fct_p50_s"] = sim::nearest_rank_quantile(short_fct, 0.5);
    tr["short_fct_p99_s"] = sim::nearest_rank_quantile(short_fct, 0.99);
    tr["short_slowdown_p50"] = sim::nearest_rank_quantile(short_slowdown, 0.5);
    tr["short_slowdown_p99"] = sim::nearest_rank_quantile(short_slowdown, 0.99);
  }
  if (!long_gbps.empty()) {
    tr["long_flows"] = long_gbps.size();
    tr["long_flow_gbps_mean"] =
        std::accumulate(long_gbps.begin(), long_gbps.end(), 0.0) / static_cast<double>(long_gbps.size());
    tr["long_flow_gbps_min"] = *std::min_element(long_gbps.begin(), long_gbps.end());
  }
  return tr;
}

// report["network"] of a traffic study: the busiest link, and ECN/PFC/drops in packet mode.
nlohmann::json network_section(const network::Network& net, const network::PacketNetwork* packet) {
  nlohmann::json out = {{"max_link_utilization", net.max_link_utilization()}};
  if (packet != nullptr) out.update(packet_report(packet->packet_stats()));
  return out;
}

}  // namespace

uint64_t run_traffic(const Config& c, nlohmann::json& report, network::FabricLinkTable* fabric_links) {
  const network::Cluster cluster(cluster_spec(c));
  sim::Simulation sim(static_cast<uint64_t>(c.seed));
  const auto& t = c.traffic;
  const int gpn = c.cluster.gpus_per_node;
  const int nodes = t.nodes > 0 ? t.nodes : c.cluster.nodes;
  const int n = nodes * gpn;
  const double gpu_share_bps = c.cluster.nic.bps() * c.cluster.nics_per_node / std::max(1, gpn);
  std::vector<FlowSpec> flows;
  if (t.pattern != "collective") flows = generate_flows(c, n, gpu_share_bps);
  std::unique_ptr<network::Network> net;
  network::PacketNetwork* packet = nullptr;
  if (c.network.mode == "packet") {
    int64_t count = t.pattern == "collective" ? n : static_cast<int64_t>(flows.size());
    int64_t bytes = t.pattern == "collective" ? n * std::max<int64_t>(1, t.size.n) : 0;
    for (const FlowSpec& f : flows) bytes += f.bytes;
    try {
      const double have = available_memory_bytes();
      network::check_packet_memory(cluster, packet_params(c), count, std::max<int64_t>(1, bytes),
                                   have > 0 ? 0.8 * have : 1e18);
    } catch (const std::invalid_argument& e) {
      throw ScenarioError({e.what()});
    }
    auto p = std::make_unique<network::PacketNetwork>(sim, cluster, network_params(c), packet_params(c));
    packet = p.get();
    for (const auto& f : c.faults) {
      if (f.kind == "pause_storm") {
        packet->inject_pause_storm(f.node * c.cluster.nics_per_node + std::max(0, f.nic),
                                   sim::Time::zero() + f.at);
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
  if (t.pattern == "collective") {
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
    report["network"] = network_section(*net, packet);
    if (sampler) report["tables"] = {{"queues", sampler->table()}};
    if (fabric_links != nullptr) *fabric_links = network::fabric_link_table(cluster, *net);
    return sim.events_executed();
  }
  FlowDriver driver(sim, *net, flows, rec);
  if (sampler) sampler->start(flows.size());
  driver.start();
  sim.run();
  nlohmann::json traffic = flow_figures(flows, driver, *net);
  report["network"] = network_section(*net, packet);
  nlohmann::json tables = nlohmann::json::object();
  if (sampler) tables["queues"] = sampler->table();
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < flows.size() && i < kMaxListedFlows; ++i) {
    const FlowSpec& f = flows[i];
    const double done = driver.done_s()[i];
    nlohmann::json row = {{"src_gpu", f.src}, {"dst_gpu", f.dst}, {"bytes", f.bytes}, {"start_s", f.start_s}};
    if (f.after >= 0) row["after"] = f.after;
    if (done >= 0.0) {
      row["started_s"] = driver.start_s()[i];
      row["fct_s"] = done - driver.start_s()[i];
    }
    rows.push_back(std::move(row));
  }
  tables["flows"] = std::move(rows);
  traffic["flows_listed"] = std::min(flows.size(), kMaxListedFlows);
  report["traffic"] = std::move(traffic);
  report["tables"] = std::move(tables);
  if (fabric_links != nullptr) *fabric_links = network::fabric_link_table(cluster, *net);
  return sim.events_executed();
}

}  // namespace ct::scenario

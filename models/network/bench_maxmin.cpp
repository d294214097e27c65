// Flow backend on the default 10,240-GPU fabric (1,280 nodes x 8 H100, 8 x 400 Gb/s NICs,
// 3-tier rail-optimized Clos, radix 128) with 100,000 concurrent flows between random
// permutation pairs: (1) start them all and solve once; (2) with the population held at
// 100,000 (every delivery starts a new flow), the cost of one departure + arrival.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "models/hardware/gpu_catalog.h"
#include "models/network/cluster.h"
#include "models/network/flow_network.h"
#include "sim/rng.h"
#include "sim/simulation.h"

namespace {

using namespace ct;

constexpr int kFlows = 100000;

const network::Cluster& default_cluster() {
  static const network::Cluster cluster = [] {
    network::ClusterSpec s;
    s.node.gpu = hardware::gpu("H100-SXM");
    s.node.nic_rate = sim::Bandwidth::gbps(400);
    s.node.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
    s.node.nvlink_latency = sim::Duration::ns(700);
    s.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
    s.nodes = 1280;
    return network::Cluster(s);
  }();
  return cluster;
}

// Random permutation pairs (a fresh permutation every gpu_count flows) and sizes 1..64 MiB.
class Traffic final : public network::DeliveryHandler {
 public:
  Traffic(sim::Simulation& sim, network::FlowNetwork& net, int gpus)
      : sim_(sim), net_(net), rng_(sim.rng(7)), perm_(static_cast<size_t>(gpus)) {}
  void start_one() {
    if (next_ == perm_.size()) reshuffle();
    const int src = static_cast<int>(next_);
    const int dst = perm_[next_++];
    const auto bytes = static_cast<int64_t>(1 + rng_.below(64)) << 20;
    net_.send(src, dst == src ? (src + 1) % static_cast<int>(perm_.size()) : dst, sim::Bytes{bytes}, *this,
              tag_++);
  }
  void on_delivered(uint64_t) override {
    ++delivered;
    start_one();
    sim_.stop();
  }
  uint64_t delivered = 0;

 private:
  void reshuffle() {
    std::iota(perm_.begin(), perm_.end(), 0);
    for (size_t i = perm_.size() - 1; i > 0; --i) std::swap(perm_[i], perm_[rng_.below(i + 1)]);
    next_ = 0;
  }
  sim::Simulation& sim_;
  network::FlowNetwork& net_;
  sim::Rng rng_;
  std::vector<int> perm_;
  size_t next_ = 0;
  uint64_t tag_ = 0;
};

void BM_Start100kFlowsAndSolve(benchmark::State& state) {
  const auto& cluster = default_cluster();
  for (auto _ : state) {
    state.PauseTiming();
    auto sim = std::make_unique<sim::Simulation>(1);
    auto net = std::make_unique<network::FlowNetwork>(*sim, cluster);
    Traffic traffic(*sim, *net, cluster.gpu_count());
    state.ResumeTiming();
    for (int i = 0; i < kFlows; ++i) traffic.start_one();
    net->solve_now();
    benchmark::DoNotOptimize(net->active_flows());
    state.PauseTiming();
    net.reset();
    sim.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_Start100kFlowsAndSolve)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_DepartureAndArrivalAt100k(benchmark::State& state) {
  const auto& cluster = default_cluster();
  sim::Simulation sim(1);
  network::FlowNetwork net(sim, cluster);
  Traffic traffic(sim, net, cluster.gpu_count());
  for (int i = 0; i < kFlows; ++i) traffic.start_one();
  net.solve_now();
  const uint64_t solves = net.solves();
  for (auto _ : state) sim.run();  // one departure (bytes done), its delivery and a new flow
  state.counters["flows"] = static_cast<double>(net.active_flows());
  state.counters["solves_per_iter"] =
      static_cast<double>(net.solves() - solves) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_DepartureAndArrivalAt100k)->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace

BENCHMARK_MAIN();

// One ring all-reduce across a whole cluster (default: 1 GiB over the 10,240 GPUs of the
// default 1,280-node x 8 H100 cluster, flow mode) and what it cost: wall time, events,
// simulated time and busbw. Usage:
//   ct_collective_bench [mode=flow] [nodes=1280] [bytes=1073741824] [algorithm=ring]
// Peak RSS: run it under /usr/bin/time -v.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "models/collective/collective.h"
#include "models/hardware/gpu_catalog.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "sim/simulation.h"

namespace {

class Done final : public ct::collective::CompletionHandler {
 public:
  void on_complete(uint64_t) override { done = true; }
  bool done = false;
};

}  // namespace

namespace {

int run(int argc, char** argv) {
  using namespace ct;
  const std::string mode = argc > 1 ? argv[1] : "flow";
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 1280;
  const int64_t bytes = argc > 3 ? std::atoll(argv[3]) : int64_t{1} << 30;
  const std::string algo = argc > 4 ? argv[4] : "ring";

  const auto t0 = std::chrono::steady_clock::now();
  network::ClusterSpec spec;
  spec.node.gpu = hardware::gpu("H100-SXM");
  spec.node.nic_rate = sim::Bandwidth::gbps(400);
  spec.node.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
  spec.node.nvlink_latency = sim::Duration::ns(700);
  spec.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  spec.nodes = nodes;
  const network::Cluster cluster(spec);
  const auto t1 = std::chrono::steady_clock::now();

  sim::Simulation sim;
  auto net = network::make_network(mode, sim, cluster);
  collective::CollectiveParams params;
  params.algorithm = algo == "tree"   ? collective::Algorithm::tree
                     : algo == "auto" ? collective::Algorithm::automatic
                                      : collective::Algorithm::ring;
  collective::CollectiveEngine engine(sim, *net, cluster, params);
  std::vector<int> group(static_cast<size_t>(cluster.gpu_count()));
  std::iota(group.begin(), group.end(), 0);
  Done done;
  engine.start(collective::Op::all_reduce, group, sim::Bytes{bytes}, done, 0);
  const auto t2 = std::chrono::steady_clock::now();
  sim.run();
  const auto t3 = std::chrono::steady_clock::now();

  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  const double t = sim.now().seconds();
  const int n = cluster.gpu_count();
  std::printf("all_reduce %lld B over %d GPUs (%d nodes), %s, %s: %s\n", static_cast<long long>(bytes), n,
              nodes, mode.c_str(), algo.c_str(), done.done ? "done" : "NOT DONE");
  std::printf("  simulated time   %.3f ms, busbw %.1f GB/s\n", t * 1e3,
              static_cast<double>(bytes) / t * collective::bus_factor(collective::Op::all_reduce, n) * 1e-9);
  std::printf("  events           %llu\n", static_cast<unsigned long long>(sim.events_executed()));
  std::printf("  wall: build cluster %.1f ms, start %.1f ms, run %.1f ms, total %.1f ms\n", ms(t0, t1),
              ms(t1, t2), ms(t2, t3), ms(t0, t3));
  std::printf("  max link utilization %.3f\n", net->max_link_utilization());
  return done.done ? 0 : 1;
}

}  // namespace

// Bad arguments are a clear error (exit 2), never an uncaught exception.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ct_collective_bench: %s\n", e.what());
    return 2;
  }
}

// Build, route and failure-recompute times of the default 10,240-NIC fabric.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "models/topology/topology.h"

namespace {

using ct::topology::FabricConfig;
using ct::topology::Path;
using ct::topology::Topology;

void BM_BuildDefault(benchmark::State& state) {
  const FabricConfig c;  // 1,280 nodes x 8 NICs, radix 128, 3 tiers
  for (auto _ : state) {
    Topology t = ct::topology::build_fabric(c);
    benchmark::DoNotOptimize(t.link_dir_count());
  }
}
BENCHMARK(BM_BuildDefault)->Unit(benchmark::kMillisecond);

void BM_Route(benchmark::State& state) {
  const Topology t = ct::topology::build_fabric(FabricConfig{});
  Path p;
  uint64_t flow = 0;
  const int n = t.nic_count();
  for (auto _ : state) {
    const int src = static_cast<int>((flow * 7919) % static_cast<uint64_t>(n));
    const int dst = static_cast<int>((flow * 104729 + 17) % static_cast<uint64_t>(n));
    t.route_into(src, dst, flow, p);
    benchmark::DoNotOptimize(p.data());
    ++flow;
  }
}
BENCHMARK(BM_Route);

void BM_FailAndRestoreLink(benchmark::State& state) {
  Topology t = ct::topology::build_fabric(FabricConfig{});
  const auto d = *t.find_link("leaf0", "spine0.pod0");
  for (auto _ : state) {
    t.set_link_state(d, ct::topology::LinkState::down);
    t.set_link_state(d, ct::topology::LinkState::up);
  }
}
BENCHMARK(BM_FailAndRestoreLink)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

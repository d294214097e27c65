// ct_packet_bench: performance of the packet backend on the htsim comparison scenario.
//
// A 1,024-host 3-tier fat tree (topology fat_tree, tiers 3, switch_radix 16: 128 leaves and
// 128 spines in 16 pods of 8 + 8, 64 cores; 8 ECMP paths inside a pod, 64 between pods;
// one 100 Gb/s NIC per host, 500 ns cables, 600 ns switches), every host sending 2 MB
// (2,000,000 bytes) to a distinct host (random derangement, fixed seed), PFC + ECN + DCQCN
// on, no protocol padding (wire = payload + 58 B RoCEv2 headers). Runs the 9000-byte MTU,
// then the 4 KiB MTU, each in a child process so that the peak RSS (VmHWM) is its own.
//
// Usage: ct_packet_bench [--pfc-only] [mtu_bytes ...]   (default: 9000 4096)
//   --pfc-only: ECN and DCQCN off (PFC alone), for comparison.
// htsim reference (same scenario, 9000 B): about 5 s wall, 85 MB, last flow at ~1.25 ms.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "models/hardware/gpu_catalog.h"
#include "models/network/cluster.h"
#include "models/network/packet_network.h"
#include "sim/simulation.h"

namespace {

using namespace ct;

long vm_hwm_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

class Sink final : public network::DeliveryHandler {
 public:
  explicit Sink(const sim::Simulation& sim) : sim_(sim) {}
  void on_delivered(uint64_t /*tag*/) override {
    last = sim_.now().seconds();
    sum += last;
    ++count;
  }
  double last = 0.0;
  double sum = 0.0;
  int count = 0;

 private:
  const sim::Simulation& sim_;
};

int run(int64_t mtu, bool cc) {
  constexpr int kHosts = 1024;
  constexpr int64_t kBytes = 2'000'000;
  const long rss_start = vm_hwm_kib();
  const auto t_build = std::chrono::steady_clock::now();
  network::ClusterSpec spec;
  spec.node.gpu = hardware::gpu("H100-SXM");
  spec.node.gpus_per_node = 1;
  spec.node.nics_per_node = 1;
  spec.node.nic_rate = sim::Bandwidth::gbps(100);
  spec.node.nvlink_rate = sim::Bandwidth::bytes_per_s(450e9);
  spec.node.nvlink_latency = sim::Duration::ns(700);
  spec.node.pcie_rate = sim::Bandwidth::bytes_per_s(64e9);
  spec.nodes = kHosts;
  spec.fabric.topology = "fat_tree";
  spec.fabric.tiers = 3;
  spec.fabric.switch_radix = 16;
  const network::Cluster cluster(spec);

  sim::Simulation sim(1);
  network::PacketParams pp;  // PFC + ECN (100 KB / 400 KB / 0.2) + DCQCN, 64 MiB buffers
  pp.mtu_bytes = mtu;
  if (!cc) {
    pp.ecn.enabled = false;
    pp.congestion_control = network::CongestionControl::none;
  }
  network::PacketNetwork net(sim, cluster, network::NetworkParams{1.0}, pp);
  Sink sink(sim);

  std::vector<int> dst(kHosts);
  std::iota(dst.begin(), dst.end(), 0);
  sim::Rng rng = sim.rng(2024);
  for (;;) {
    for (size_t i = dst.size() - 1; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    bool fixed = false;
    for (int i = 0; i < kHosts; ++i) fixed = fixed || dst[static_cast<size_t>(i)] == i;
    if (!fixed) break;
  }
  for (int i = 0; i < kHosts; ++i) {
    net.send(i, dst[static_cast<size_t>(i)], sim::Bytes{kBytes}, sink, static_cast<uint64_t>(i));
  }
  const auto t0 = std::chrono::steady_clock::now();
  sim.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double build = std::chrono::duration<double>(t0 - t_build).count();
  const network::PacketStats s = net.packet_stats();
  const auto events = static_cast<double>(sim.events_executed());
  const auto packets = static_cast<double>(s.packets_sent);
  std::printf(
      "MTU %5lld%s: %d/%d flows, last flow %.3f us, mean FCT %.3f us (ideal %.3f us)\n"
      "           wall %.3f s (+ %.3f s build), %.0f events (%.3g/s), %.0f packets (%.3g/s), "
      "peak packets %zu\n"
      "           peak RSS %.1f MB (%.1f MB at start); pauses %llu, ECN-marked %.4f, CNPs %llu, drops %llu, "
      "max queue %lld B, pause-tree edges %zu (max hop %d), victims %llu, dependency cycle %s\n",
      static_cast<long long>(mtu), cc ? "" : " (PFC only)", sink.count, kHosts, sink.last * 1e6,
      sink.sum / sink.count * 1e6,
      (static_cast<double>(kBytes) / static_cast<double>(mtu) * static_cast<double>(mtu + 58) * 8.0 / 100e9) *
          1e6,
      wall, build, events, events / wall, packets, packets / wall, net.peak_packets(),
      static_cast<double>(vm_hwm_kib()) / 1024.0, static_cast<double>(rss_start) / 1024.0,
      static_cast<unsigned long long>(s.pfc_pause_frames), s.ecn_marked_fraction,
      static_cast<unsigned long long>(s.cnps), static_cast<unsigned long long>(s.dropped_packets),
      static_cast<long long>(s.max_queue_bytes), s.pause_tree.size(), s.max_pause_hops,
      static_cast<unsigned long long>(s.victim_flow_count), s.buffer_dependency_cycle ? "yes" : "no");
  std::fflush(stdout);
  return sink.count == kHosts ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> mtus;
  bool cc = true;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--pfc-only") {
      cc = false;
    } else {
      mtus.push_back(std::strtoll(argv[i], nullptr, 10));
    }
  }
  if (mtus.empty()) mtus = {9000, 4096};
  std::printf("ct_packet_bench: 1024-host 3-tier fat tree (radix 16), 100 Gb/s, permutation x 2 MB, %s\n",
              cc ? "PFC+ECN+DCQCN" : "PFC only");
  std::fflush(stdout);
  int rc = 0;
  for (const int64_t mtu : mtus) {
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        std::_Exit(run(mtu, cc));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ct_packet_bench: %s\n", e.what());
        std::_Exit(2);
      }
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}

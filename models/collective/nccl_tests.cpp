#include "models/collective/nccl_tests.h"

#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "sim/simulation.h"

namespace ct::collective {
namespace {

class Done final : public CompletionHandler {
 public:
  void on_complete(uint64_t) override { done = true; }
  bool done = false;
};

bool is_reduction(Op op) { return op == Op::all_reduce || op == Op::reduce_scatter; }

}  // namespace

std::vector<NcclTestsRow> run_nccl_tests(const network::Cluster& cluster, const NcclTestsOptions& o) {
  if (o.nodes < 1 || o.nodes > cluster.nodes()) {
    throw std::invalid_argument("nccl-tests nodes: got " + std::to_string(o.nodes) + ", expected 1.." +
                                std::to_string(cluster.nodes()));
  }
  if (o.min_bytes <= 0 || o.max_bytes < o.min_bytes) {
    throw std::invalid_argument("nccl-tests min_bytes/max_bytes: got " + std::to_string(o.min_bytes) + " / " +
                                std::to_string(o.max_bytes) + ", expected 0 < min <= max");
  }
  std::vector<int> group(static_cast<size_t>(o.nodes * cluster.gpus_per_node()));
  std::iota(group.begin(), group.end(), 0);
  if (o.op == Op::send_recv) group = {0, static_cast<int>(group.size()) - 1};
  const int n = static_cast<int>(group.size());

  sim::Simulation sim;
  const auto net = network::make_network(o.network_mode, sim, cluster, o.network);
  CollectiveEngine engine(sim, *net, cluster, o.collective);
  std::vector<NcclTestsRow> rows;
  for (int64_t size = o.min_bytes; size <= o.max_bytes; size *= 2) {
    Done done;
    const sim::Time t0 = sim.now();
    NcclTestsRow row;
    row.algorithm = engine.choose(o.op, group, sim::Bytes{size});
    engine.start(o.op, group, sim::Bytes{size}, done, 0);
    sim.run();
    if (!done.done) throw std::runtime_error("nccl-tests: the collective never completed (no capacity?)");
    const double t = (sim.now() - t0).seconds();
    row.size_bytes = size;
    row.count = size / 4;
    row.redop = is_reduction(o.op) ? "sum" : "none";
    row.root = o.op == Op::broadcast ? 0 : -1;
    row.time_us = t * 1e6;
    row.algbw_GBps = t > 0.0 ? static_cast<double>(size) / t * 1e-9 : 0.0;
    row.busbw_GBps = row.algbw_GBps * bus_factor(o.op, n);
    rows.push_back(row);
    if (size > o.max_bytes / 2) break;
  }
  return rows;
}

std::string format_nccl_tests(std::span<const NcclTestsRow> rows, const NcclTestsOptions& o, int ranks) {
  std::string out;
  char buf[512];
  auto emit = [&](const char* text) { out += text; };
  std::snprintf(buf, sizeof buf,
                "# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: 2(factor) warmup iters: 0 iters: 1 "
                "agg iters: 1 validation: 0 graph: 0\n#\n",
                static_cast<long long>(o.min_bytes), static_cast<long long>(o.max_bytes));
  emit(buf);
  std::snprintf(buf, sizeof buf, "# ClusterTwin %s, network %s, %d ranks on %d nodes\n#\n",
                std::string(op_name(o.op)).c_str(), o.network_mode.c_str(), ranks, o.nodes);
  emit(buf);
  std::snprintf(
      buf, sizeof buf,
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
      "", "", "");
  emit(buf);
  std::snprintf(buf, sizeof buf, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n",
                "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong");
  emit(buf);
  std::snprintf(buf, sizeof buf, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  emit(buf);
  double sum = 0.0;
  for (const NcclTestsRow& r : rows) {
    char time[32];
    if (r.time_us >= 10000.0)
      std::snprintf(time, sizeof time, "%7.0f", r.time_us);
    else if (r.time_us >= 100.0)
      std::snprintf(time, sizeof time, "%7.1f", r.time_us);
    else
      std::snprintf(time, sizeof time, "%7.2f", r.time_us);
    std::snprintf(buf, sizeof buf,
                  "%12lld  %12lld  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6.2f  %6.2f  %5s\n",
                  static_cast<long long>(r.size_bytes), static_cast<long long>(r.count), r.type.c_str(),
                  r.redop.c_str(), r.root, time, r.algbw_GBps, r.busbw_GBps, "0", time, r.algbw_GBps,
                  r.busbw_GBps, "0");
    emit(buf);
    sum += r.busbw_GBps;
  }
  emit("# Out of bounds values : 0 OK\n");
  std::snprintf(buf, sizeof buf, "# Avg bus bandwidth    : %g \n#\n",
                rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
  emit(buf);
  return out;
}

}  // namespace ct::collective

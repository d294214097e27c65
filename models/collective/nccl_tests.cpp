#include "models/collective/nccl_tests.h"

#include <array>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "sim/simulation.h"

namespace ct::collective {
namespace {

class Done final : public CompletionHandler {
 public:
  void on_complete(uint64_t) override { done = true; }
  bool done = false;
};

bool is_reduction(Op op) { return op == Op::all_reduce || op == Op::reduce_scatter; }

// nccl-tests' type names (src/common.cu test_typenames) and their sizes.
constexpr std::array<std::pair<std::string_view, int>, 12> kDatatypes{{{"int8", 1},
                                                                       {"uint8", 1},
                                                                       {"int32", 4},
                                                                       {"uint32", 4},
                                                                       {"int64", 8},
                                                                       {"uint64", 8},
                                                                       {"half", 2},
                                                                       {"float", 4},
                                                                       {"double", 8},
                                                                       {"bfloat16", 2},
                                                                       {"f8e4m3", 1},
                                                                       {"f8e5m2", 1}}};
constexpr std::array<std::string_view, 5> kRedops{"sum", "prod", "max", "min", "avg"};

}  // namespace

int nccl_datatype_bytes(const std::string& name) {
  std::string names;
  for (const auto& [n, bytes] : kDatatypes) {
    if (n == name) return bytes;
    names += " " + std::string(n);
  }
  throw std::invalid_argument("got '" + name + "', expected one of" + names);
}

void check_nccl_redop(const std::string& name) {
  std::string names;
  for (const std::string_view n : kRedops) {
    if (n == name) return;
    names += " " + std::string(n);
  }
  throw std::invalid_argument("got '" + name + "', expected one of" + names);
}

std::vector<int64_t> nccl_tests_sizes(const NcclTestsOptions& o) {
  if (o.step_bytes < 0)
    throw std::invalid_argument("stepbytes: got " + std::to_string(o.step_bytes) + ", expected >= 1");
  if (o.step_bytes == 0 && o.step_factor < 2)
    throw std::invalid_argument("stepfactor: got " + std::to_string(o.step_factor) + ", expected >= 2");
  std::vector<int64_t> sizes;
  for (int64_t size = o.min_bytes; size <= o.max_bytes;) {
    if (sizes.size() == kMaxNcclTestsSizes) {
      throw std::invalid_argument("stepbytes/stepfactor: more than " + std::to_string(kMaxNcclTestsSizes) +
                                  " sizes from " + std::to_string(o.min_bytes) + " to " +
                                  std::to_string(o.max_bytes) + " bytes; use a larger step");
    }
    sizes.push_back(size);
    // Stop before the next size would pass max_bytes (written so that it cannot overflow).
    if (o.step_bytes > 0) {
      if (size > o.max_bytes - o.step_bytes) break;
      size += o.step_bytes;
    } else {
      if (size > o.max_bytes / o.step_factor) break;
      size *= o.step_factor;
    }
  }
  return sizes;
}

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
  if (!o.node_list.empty()) {
    if (static_cast<int>(o.node_list.size()) != o.nodes) {
      throw std::invalid_argument("nccl-tests node_list: " + std::to_string(o.node_list.size()) +
                                  " nodes listed, expected nodes = " + std::to_string(o.nodes));
    }
    const int per = cluster.gpus_per_node();
    for (size_t k = 0; k < o.node_list.size(); ++k) {
      const int node = o.node_list[k];
      if (node < 0 || node >= cluster.nodes()) {
        throw std::invalid_argument("nccl-tests node_list: got node " + std::to_string(node) +
                                    ", expected 0.." + std::to_string(cluster.nodes() - 1));
      }
      for (int g = 0; g < per; ++g)
        group[k * static_cast<size_t>(per) + static_cast<size_t>(g)] = node * per + g;
    }
  }
  if (o.op == Op::send_recv) group = {group.front(), group.back()};
  const int n = static_cast<int>(group.size());

  sim::Simulation sim;
  // Link faults change the topology (link_down, switch_down) and capacities: on a copy.
  std::optional<network::Cluster> faulted;
  if (!o.faults.empty()) faulted.emplace(cluster);
  const network::Cluster& fabric = faulted ? *faulted : cluster;
  const auto net = network::make_network(o.network_mode, sim, fabric, o.network);
  std::unique_ptr<network::CapacityFaults> faults;
  if (faulted) {
    faults =
        std::make_unique<network::CapacityFaults>(sim, *net, *faulted, network::resolve(*faulted, o.faults));
  }
  CollectiveEngine engine(sim, *net, fabric, o.collective);
  const int64_t element = nccl_datatype_bytes(o.datatype);
  check_nccl_redop(o.redop);
  std::vector<NcclTestsRow> rows;
  for (const int64_t size : nccl_tests_sizes(o)) {
    Done done;
    const sim::Time t0 = sim.now();
    NcclTestsRow row;
    row.algorithm = engine.choose(o.op, group, sim::Bytes{size});
    engine.start(o.op, group, sim::Bytes{size}, done, 0);
    sim.run();
    if (!done.done) throw std::runtime_error("nccl-tests: the collective never completed (no capacity?)");
    const double t = (sim.now() - t0).seconds();
    row.size_bytes = size;
    row.count = size / element;
    row.type = o.datatype;
    row.redop = is_reduction(o.op) ? o.redop : "none";
    row.root = o.op == Op::broadcast ? 0 : -1;
    row.time_us = t * 1e6;
    row.algbw_GBps = t > 0.0 ? static_cast<double>(size) / t * 1e-9 : 0.0;
    row.busbw_GBps = row.algbw_GBps * bus_factor(o.op, n);
    rows.push_back(row);
  }
  return rows;
}

std::string format_nccl_tests(std::span<const NcclTestsRow> rows, const NcclTestsOptions& o, int ranks) {
  std::string out;
  char buf[512];
  auto emit = [&](const char* text) { out += text; };
  std::snprintf(buf, sizeof buf,
                "# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: 0 iters: 1 "
                "agg iters: 1 validation: 0 graph: 0\n#\n",
                static_cast<long long>(o.min_bytes), static_cast<long long>(o.max_bytes),
                static_cast<long long>(o.step_bytes > 0 ? o.step_bytes : o.step_factor),
                o.step_bytes > 0 ? "bytes" : "factor");
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

#include "models/scenario/traffic_flows.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "models/scenario/loader.h"
#include "sim/input_limits.h"
#include "sim/rng.h"

namespace ct::scenario {
namespace {

// Flows a study may hold (file rows or generated arrivals): a bound on memory and run time.
constexpr size_t kMaxFlows = 2'000'000;

[[noreturn]] void fail(const std::string& what) { throw ScenarioError({what}); }

double sample(const std::vector<std::pair<double, double>>& cdf, double u) {
  for (size_t i = 1; i < cdf.size(); ++i) {
    if (u <= cdf[i].second) {
      const auto [x0, p0] = cdf[i - 1];
      const auto [x1, p1] = cdf[i];
      return p1 > p0 ? x0 + (x1 - x0) * (u - p0) / (p1 - p0) : x1;
    }
  }
  return cdf.back().first;
}

std::vector<FlowSpec> read_file(const std::string& path, int gpus) {
  std::string text;
  try {
    text = sim::read_bounded(path, "input_file_bytes", "traffic.flows_file: '" + path + "'");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  std::istringstream in(text);
  std::vector<FlowSpec> flows;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 || line.empty() || line[0] == '#') continue;  // header
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream row(line);
    FlowSpec f;
    std::string extra;
    const std::string where = "traffic.flows_file: " + path + " line " + std::to_string(number) + ": ";
    if (!(row >> f.src >> f.dst >> f.bytes >> f.start_s)) {
      fail(where + "got '" + line + "', expected src_gpu,dst_gpu,bytes,start_s[,after]");
    }
    if (row >> extra) {
      size_t used = 0;
      try {
        f.after = std::stoll(extra, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != extra.size() || (row >> extra)) {
        fail(where + "got '" + line + "', expected src_gpu,dst_gpu,bytes,start_s[,after]");
      }
      if (f.after < -1 || f.after >= static_cast<int64_t>(flows.size())) {
        fail(where + "after " + std::to_string(f.after) +
             ", expected -1 (none) or the row index of an earlier flow (0 .. " +
             std::to_string(static_cast<int64_t>(flows.size()) - 1) + ")");
      }
    }
    if (f.src < 0 || f.src >= gpus || f.dst < 0 || f.dst >= gpus || f.src == f.dst) {
      fail(where + "GPUs " + std::to_string(f.src) + " -> " + std::to_string(f.dst) +
           ", expected two different GPUs in 0 .. " + std::to_string(gpus - 1));
    }
    if (f.bytes <= 0) fail(where + "bytes " + std::to_string(f.bytes) + ", expected a positive size");
    if (!(f.start_s >= 0.0) || !std::isfinite(f.start_s) || f.start_s > 3600.0) {
      fail(where + "start_s " + std::to_string(f.start_s) + ", expected 0 .. 3600 seconds");
    }
    if (flows.size() == kMaxFlows) {
      fail("traffic.flows_file: more than " + std::to_string(kMaxFlows) +
           " flows; expected at most that many");
    }
    flows.push_back(f);
  }
  if (flows.empty())
    fail("traffic.flows_file: " + path + " has no flows (expected a header line, then rows)");
  return flows;
}

}  // namespace

const std::vector<std::pair<double, double>>& flow_size_cdf(const std::string& name) {
  // HPCC's traffic_gen/WebSearch_distribution.txt and FbHdp_distribution.txt (bytes, %).
  static const std::vector<std::pair<double, double>> websearch = {
      {0, 0.00},     {10e3, 0.15}, {20e3, 0.20}, {30e3, 0.30}, {50e3, 0.40}, {80e3, 0.53},
      {200e3, 0.60}, {1e6, 0.70},  {2e6, 0.80},  {5e6, 0.90},  {10e6, 0.97}, {30e6, 1.00}};
  static const std::vector<std::pair<double, double>> hadoop = {
      {0, 0.00},    {100, 0.01},   {200, 0.02},   {300, 0.05},  {350, 0.15},  {400, 0.20},  {500, 0.30},
      {600, 0.40},  {700, 0.50},   {1000, 0.60},  {2000, 0.67}, {7000, 0.70}, {30e3, 0.72}, {50e3, 0.82},
      {80e3, 0.87}, {120e3, 0.90}, {300e3, 0.95}, {1e6, 0.975}, {2e6, 0.99},  {10e6, 1.00}};
  return name == "hadoop" ? hadoop : websearch;
}

double flow_size_mean(const std::vector<std::pair<double, double>>& cdf) {
  double m = 0.0;
  for (size_t i = 1; i < cdf.size(); ++i) {
    m += (cdf[i].second - cdf[i - 1].second) * 0.5 * (cdf[i].first + cdf[i - 1].first);
  }
  return m;
}

std::vector<FlowSpec> generate_flows(const Config& c, int gpus, double gpu_share_bps) {
  const TrafficSection& t = c.traffic;
  const int gpn = c.cluster.gpus_per_node;
  std::vector<FlowSpec> flows;
  sim::Rng rng(static_cast<uint64_t>(c.seed), 0x7065726d);
  auto incast = [&](bool background) {
    if (t.fan_in >= c.cluster.nodes) {
      fail("traffic.fan_in: got " + std::to_string(t.fan_in) +
           ", expected below cluster.nodes = " + std::to_string(c.cluster.nodes));
    }
    for (int s = 1; s <= t.fan_in; ++s) flows.push_back({s * gpn, 0, t.size.n, 0.0, background});
  };
  if (t.pattern == "incast") {
    incast(false);
  } else if (t.pattern == "permutation") {
    std::vector<int> dst(static_cast<size_t>(gpus));
    std::iota(dst.begin(), dst.end(), 0);
    for (size_t i = dst.size() - 1; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    for (int g = 0; g < gpus; ++g) {
      const int d = dst[static_cast<size_t>(g)] == g ? dst[static_cast<size_t>((g + 1) % gpus)]
                                                     : dst[static_cast<size_t>(g)];
      if (d != g) flows.push_back({g, d, t.size.n, 0.0, false});
    }
  } else if (t.pattern == "all_to_all") {
    if (gpus > 4096) {
      fail("traffic.nodes: all_to_all over " + std::to_string(gpus) +
           " GPUs needs n^2 flows; expected at most 4096 GPUs (set traffic.nodes)");
    }
    for (int a = 0; a < gpus; ++a) {
      for (int b = 0; b < gpus; ++b) {
        if (a != b) flows.push_back({a, b, std::max<int64_t>(1, t.size.n / gpus), 0.0, false});
      }
    }
  } else if (t.pattern == "websearch" || t.pattern == "hadoop") {
    if (gpus < 2) fail("traffic.nodes: " + t.pattern + " needs at least 2 GPUs");
    const auto& cdf = flow_size_cdf(t.pattern);
    const double mean_bytes = flow_size_mean(cdf);
    const double window = t.duration.seconds();
    const double per_gpu_rate = t.load * gpu_share_bps / (8.0 * mean_bytes);  // flows per second
    const double expected = per_gpu_rate * window * gpus;
    if (expected > static_cast<double>(kMaxFlows)) {
      fail("traffic.duration: " + std::to_string(window) + " s at load " + std::to_string(t.load) + " over " +
           std::to_string(gpus) + " GPUs is about " + std::to_string(static_cast<int64_t>(expected)) +
           " flows; expected at most " + std::to_string(kMaxFlows) +
           " (shorten traffic.duration or set traffic.nodes)");
    }
    if (t.background == "incast") incast(true);
    for (int g = 0; g < gpus; ++g) {
      double at = rng.exponential(1.0 / per_gpu_rate);
      while (at < window) {
        auto d = static_cast<int>(rng.below(static_cast<uint64_t>(gpus - 1)));
        if (d >= g) ++d;
        const auto bytes = std::max<int64_t>(1, std::llround(sample(cdf, rng.uniform01())));
        flows.push_back({g, d, bytes, at, false});
        at += rng.exponential(1.0 / per_gpu_rate);
      }
    }
    std::stable_sort(flows.begin(), flows.end(),
                     [](const FlowSpec& a, const FlowSpec& b) { return a.start_s < b.start_s; });
  } else if (t.pattern == "file") {
    if (t.flows_file.empty()) fail("traffic.flows_file: expected a CSV file for pattern file");
    flows = read_file(t.flows_file, gpus);
  }
  return flows;
}

}  // namespace ct::scenario

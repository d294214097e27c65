// PyTorch profiler (Kineto) Chrome-trace JSON, gzipped or not -> one-rank replay::StepProgram.
//
// Rules:
//   * GPU events are the complete ("X") events of category kernel, gpu_memset and gpu_memcpy
//     on one device (args.device; KinetoOptions::device, or the only one present).
//   * The step: when the trace has ProfilerStep#N annotations (CPU), the GPU events launched
//     (cuda_runtime/cuda_driver event with the same args.correlation) inside the last one;
//     otherwise every GPU event of the trace (a profile of one step).
//   * Order and duration: events sorted by start time, each one compute instruction of its
//     measured duration on the compute stream (the executor runs them in order). Events that
//     overlapped in time (several CUDA streams) are serialized; the overlap is reported in
//     KinetoStats::overlap_s.
//   * Idle: with keep_idle_gaps, each interval in which no GPU event ran between the first
//     start and the last end becomes an idle instruction (trace_import.h) of that length, so
//     the replayed step equals the trace's GPU span; without, the replay is the GPU-busy time.
//   * Category: optimizer for events that start inside a GPU annotation named
//     "Optimizer.step*"; backward for events launched from the autograd thread (the CPU
//     thread that runs autograd::engine::evaluate_function ops); forward otherwise.
//   * NCCL kernels (name contains "nccl", any case) keep their measured duration and count as
//     exposed communication (tp_seconds = seconds): a one-rank program has no peers to run the
//     collective with.
//   * The execution trace (pytorch_et JSON) is only checked: it holds CPU operator
//     dependencies without GPU timings, and on one GPU stream the kernel order is already a
//     total order, so it adds no dependency the replay can use yet (it would for several
//     streams or ranks, or to model CPU launch overhead instead of replaying measured gaps).
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "models/trace/file_io.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using nlohmann::json;
using replay::Category;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

constexpr const char* kKey = "trace.path";

json parse_json(const std::string& path, const std::string& key) {
  const std::string text = detail::read_maybe_gzip(path, key);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw TraceError(key + ": " + path + ": not JSON (" + e.what() + ")");
  }
}

double num(const json& e, const char* k) {
  const auto it = e.find(k);
  return it != e.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

int64_t arg_int(const json& e, const char* k, int64_t fallback) {
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return fallback;
  const auto it = a->find(k);
  return it != a->end() && it->is_number() ? it->get<int64_t>() : fallback;
}

std::string str(const json& e, const char* k) {
  const auto it = e.find(k);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct GpuEvent {
  double ts, dur;  // us
  std::string cat, name;
  int64_t correlation, stream;
};

}  // namespace

replay::StepProgram import_kineto(const std::string& trace_path, const KinetoOptions& options, KinetoStats* stats) {
  const json doc = parse_json(trace_path, kKey);
  const json* events = nullptr;
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else if (doc.is_array()) {
    events = &doc;
  } else {
    throw TraceError(std::string(kKey) + ": " + trace_path + ": not a Kineto/Chrome trace (no traceEvents array)");
  }

  KinetoStats st;
  std::map<int64_t, std::vector<GpuEvent>> by_device;
  std::unordered_map<int64_t, std::pair<double, int64_t>> launch;  // correlation -> (ts, tid)
  std::set<int64_t> autograd_tids;
  double step_begin = -1, step_end = -1;
  std::vector<std::pair<double, double>> optimizer_windows;
  for (const json& e : *events) {
    if (!e.is_object() || str(e, "ph") != "X") continue;
    const std::string cat = str(e, "cat");
    const std::string name = str(e, "name");
    const double ts = num(e, "ts"), dur = num(e, "dur");
    if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") {
      if (!(ts == ts) || !(dur >= 0)) {
        throw TraceError(std::string(kKey) + ": " + trace_path + ": GPU event " + name + " lacks ts/dur");
      }
      const int64_t device = arg_int(e, "device", static_cast<int64_t>(num(e, "pid") == num(e, "pid") ? num(e, "pid") : 0));
      by_device[device].push_back({ts, dur, cat, name, arg_int(e, "correlation", -1), arg_int(e, "stream", 0)});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const int64_t c = arg_int(e, "correlation", -1);
      if (c >= 0) launch[c] = {ts, static_cast<int64_t>(num(e, "tid") == num(e, "tid") ? num(e, "tid") : -1)};
    } else if (cat == "cpu_op" && name.rfind("autograd::engine::evaluate_function", 0) == 0) {
      if (num(e, "tid") == num(e, "tid")) autograd_tids.insert(static_cast<int64_t>(num(e, "tid")));
    } else if (cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0) {
      if (ts > step_begin) {
        step_begin = ts;
        step_end = ts + dur;
      }
    } else if (cat == "gpu_user_annotation" && name.rfind("Optimizer.step", 0) == 0) {
      optimizer_windows.emplace_back(ts, ts + dur);
    }
  }
  if (by_device.empty()) throw TraceError(std::string(kKey) + ": " + trace_path + ": no GPU kernel events");
  int64_t device = options.device;
  if (device < 0) {
    if (by_device.size() > 1) {
      throw TraceError(std::string(kKey) + ": " + trace_path + ": GPU events of " + std::to_string(by_device.size()) +
                       " devices; choose one");
    }
    device = by_device.begin()->first;
  }
  const auto dit = by_device.find(device);
  if (dit == by_device.end()) {
    throw TraceError(std::string(kKey) + ": " + trace_path + ": no GPU events on device " + std::to_string(device));
  }
  std::vector<GpuEvent> gpu;
  for (const GpuEvent& g : dit->second) {
    if (step_begin >= 0) {
      const auto l = launch.find(g.correlation);
      if (l == launch.end() || l->second.first < step_begin || l->second.first > step_end) continue;
    }
    gpu.push_back(g);
  }
  if (gpu.empty()) throw TraceError(std::string(kKey) + ": " + trace_path + ": no GPU events in the last ProfilerStep");
  std::stable_sort(gpu.begin(), gpu.end(), [](const GpuEvent& a, const GpuEvent& b) { return a.ts < b.ts; });

  replay::RankProgram rank;
  rank.gpu = 0;
  std::set<int64_t> streams;
  const double t0 = gpu.front().ts;
  double frontier = t0;  // latest end so far
  for (const GpuEvent& g : gpu) {
    const double end = g.ts + g.dur;
    if (g.ts > frontier) {
      const double gap = (g.ts - frontier) * 1e-6;
      st.idle_s += gap;
      if (options.keep_idle_gaps) {
        Instr idle;
        idle.kind = InstrKind::compute;
        idle.stream = Stream::compute;
        idle.category = Category::step_end;
        idle.seconds = gap;
        rank.instrs.push_back(idle);
      }
    } else {
      st.overlap_s += (std::min(frontier, end) - g.ts) * 1e-6;
    }
    frontier = std::max(frontier, end);
    streams.insert(g.stream);
    Instr in;
    in.kind = InstrKind::compute;
    in.stream = Stream::compute;
    in.seconds = g.dur * 1e-6;
    bool opt = false;
    for (const auto& [b, e] : optimizer_windows) opt = opt || (g.ts >= b && g.ts < e);
    const auto l = launch.find(g.correlation);
    const bool bwd = l != launch.end() && autograd_tids.count(l->second.second) != 0;
    in.category = opt ? Category::optimizer : bwd ? Category::backward : Category::forward;
    (opt ? st.optimizer : bwd ? st.backward : st.forward) += 1;
    std::string lower = g.name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("nccl") != std::string::npos) {
      in.tp_seconds = in.seconds;
      ++st.nccl_kernels;
    }
    (g.cat == "kernel" ? st.kernels : g.cat == "gpu_memset" ? st.memsets : st.memcpys) += 1;
    st.gpu_busy_s += in.seconds;
    rank.instrs.push_back(in);
  }
  st.span_s = (frontier - t0) * 1e-6;
  st.streams = static_cast<int>(streams.size());
  Instr end;
  end.kind = InstrKind::compute;
  end.stream = Stream::compute;
  end.category = Category::step_end;
  rank.instrs.push_back(end);

  if (!options.execution_trace.empty()) {
    const json et = parse_json(options.execution_trace, "trace.execution_trace");
    if (!et.is_object() || !et.contains("nodes") || !et["nodes"].is_array()) {
      throw TraceError("trace.execution_trace: " + options.execution_trace +
                       ": not a PyTorch execution trace (no nodes array)");
    }
    st.et_nodes = static_cast<int>(et["nodes"].size());
  }

  replay::StepProgram program;
  program.ranks.push_back(std::move(rank));
  program.steps = 1;
  if (stats != nullptr) *stats = st;
  return program;
}

}  // namespace ct::trace

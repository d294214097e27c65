// Kineto JSON -> KinetoTrace (see kineto_events.h for the fields read).
#include "models/trace/kineto_events.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "models/trace/file_io.h"
#include "models/trace/trace_import.h"
#include "sim/input_limits.h"
#include "sim/json_dom.h"

namespace ct::trace::kineto {
namespace {

using nlohmann::json;

constexpr double kMaxGpuEventUs = 1e9;

double num(const json& e, const char* k) {
  const auto it = e.find(k);
  return it != e.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

// An integer field; a float is truncated when it fits int64, anything else gives the fallback.
int64_t int_or(const json& e, const char* k, int64_t fallback) {
  const auto it = e.find(k);
  if (it == e.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_number_float()) return fallback;
  const double d = it->get<double>();
  return std::isfinite(d) && std::fabs(d) < 9.2e18 ? static_cast<int64_t>(d) : fallback;
}

int64_t arg_int(const json& e, const char* k, int64_t fallback) {
  const auto a = e.find("args");
  return a == e.end() || !a->is_object() ? fallback : int_or(*a, k, fallback);
}

std::string str(const json& e, const char* k) {
  const auto it = e.find(k);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "ProfilerStep#N" -> N, -1 when the name is not one.
int64_t profiler_step_number(const std::string& name) {
  if (!starts_with(name, "ProfilerStep#")) return -1;
  int64_t n = 0;
  size_t i = 13;
  for (; i < name.size() && i < 31 && std::isdigit(static_cast<unsigned char>(name[i])) != 0; ++i)
    n = n * 10 + (name[i] - '0');
  return i == 13 ? -1 : n;
}

template <size_t N>
bool one_of(const std::string& s, const std::array<std::string_view, N>& names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return s == n; });
}

// What read_kineto keeps of a trace while it is parsed, so memory holds what the importers
// read and not the rest (flow arrows, instant and metadata events, python_function events, and
// per-kernel launch geometry are most of a real trace): complete ("X") events of the categories
// below, their fields below, and of their args the keys the importers read (kineto_events.cpp,
// kineto_ranks.cpp, op_view.cpp). Everything else at the top level is kept as it is.
constexpr std::array<std::string_view, 9> kEventCats = {
    "kernel", "gpu_memset",      "gpu_memcpy",          "cuda_runtime", "cuda_driver",
    "cpu_op", "user_annotation", "gpu_user_annotation", "overhead"};
constexpr std::array<std::string_view, 8> kEventFields = {"ph",  "cat", "name", "ts",
                                                          "dur", "pid", "tid",  "args"};
constexpr std::array<std::string_view, 17> kArgFields = {"External id",
                                                         "Record function id",
                                                         "correlation",
                                                         "device",
                                                         "stream",
                                                         "Input Dims",
                                                         "Input type",
                                                         "Concrete Inputs",
                                                         "Collective name",
                                                         "In msg nelems",
                                                         "Out msg nelems",
                                                         "Group size",
                                                         "Process Group Ranks",
                                                         "Process Group Name",
                                                         "Src Rank",
                                                         "Dst Rank",
                                                         "dtype"};

// The filter as a DOM builder: events sit at level 1 of an array trace and at level 2 of an
// object trace (under "traceEvents"). An unwanted event becomes null in place.
class KinetoDom : public sim::JsonDomBuilder {
 public:
  KinetoDom(std::string where, std::map<std::string, int64_t>& categories)
      : where_(std::move(where)), max_events_(sim::input_limit("trace_events")), categories_(categories) {}

 protected:
  bool keep(const std::string& k) override {
    const size_t level = event_level();
    if (level == 0) return true;
    if (depth() == level + 1) return one_of(k, kEventFields);
    if (depth() == level + 2 && key_at(level) == "args") return one_of(k, kArgFields);
    return true;
  }
  void object_done(json& obj) override {
    const size_t level = event_level();
    if (level == 0 || depth() != level) return;
    if (++events_ > max_events_) {
      try {
        sim::input_limit_exceeded("trace_events", where_, events_, true);
      } catch (const sim::InputLimitError& e) {
        throw TraceError(e.what());
      }
    }
    const auto ph = obj.find("ph");
    const auto cat = obj.find("cat");
    const bool complete = ph != obj.end() && ph->is_string() && ph->get_ref<const std::string&>() == "X" &&
                          cat != obj.end() && cat->is_string();
    if (!complete) {
      obj = nullptr;
      return;
    }
    if (categories_.size() < 64 || categories_.count(cat->get_ref<const std::string&>()) != 0)
      ++categories_[cat->get_ref<const std::string&>()];
    std::string canonical = canonical_category(cat->get_ref<const std::string&>());
    if (!one_of(canonical, kEventCats)) {
      obj = nullptr;
      return;
    }
    *cat = std::move(canonical);
  }

 private:
  // Level of event objects, or 0 while not inside the event array.
  [[nodiscard]] size_t event_level() const {
    const json* root = container(0);
    if (root == nullptr) return 0;
    if (root->is_array()) return 1;
    return key_at(0) == "traceEvents" && container(1) != nullptr && container(1)->is_array() ? 2 : 0;
  }

  std::string where_;
  int64_t max_events_;
  int64_t events_ = 0;
  std::map<std::string, int64_t>& categories_;
};

json parse_kineto_text(const std::string& text, const std::string& path, const std::string& key,
                       std::map<std::string, int64_t>& categories) {
  KinetoDom dom(key + ": " + path, categories);
  try {
    return dom.parse(text);
  } catch (const sim::JsonDomBuilder::ParseFailure& e) {
    if (e.overflow) throw TraceError(key + ": " + path + ": not JSON: " + e.what());
    throw TraceError(key + ": " + path + ": not JSON: syntax error at byte " + std::to_string(e.byte) +
                     " of " + std::to_string(text.size()) + " (" + e.what() + ")");
  }
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& path, const std::string& key) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw TraceError(key + ": " + path + ": not JSON: syntax error at byte " + std::to_string(e.byte) +
                     " of " + std::to_string(text.size()) + " (" + e.what() + ")");
  } catch (const json::exception& e) {  // out_of_range 406: a number beyond double's range
    throw TraceError(key + ": " + path + ": not JSON: " + e.what());
  }
}

KinetoTrace read_kineto(const std::string& path, const std::string& key) {
  KinetoTrace t;
  t.doc = parse_kineto_text(detail::read_maybe_gzip(path, key), path, key, t.categories);
  const json* events = nullptr;
  if (t.doc.is_object() && t.doc.contains("traceEvents") && t.doc["traceEvents"].is_array()) {
    events = &t.doc["traceEvents"];
  } else if (t.doc.is_array()) {
    events = &t.doc;
  } else if (t.doc.is_object() && t.doc.contains("nodes") && t.doc.contains("schema")) {
    // A PyTorch execution trace: operators and shapes, no GPU times of its own.
    throw TraceError(
        key + ": " + path + ": a PyTorch execution trace (schema " +
        (t.doc["schema"].is_string() ? t.doc["schema"].get<std::string>() : std::string("?")) +
        "), not a Kineto trace: it holds the operators and their shapes but no GPU kernel times. "
        "Replay the Kineto trace of the same run with this file as trace.execution_trace "
        "(ct.load_trace(kineto, execution_trace=this)), or convert it to Chakra .et files "
        "(chakra_trace_link and chakra_converter) and replay those");
  } else if (t.doc.is_object() && t.doc.contains("workload_graph")) {
    throw TraceError(key + ": " + path +
                     ": a Chakra JSON dump (chakra_jsonizer output, a debugging view), not a "
                     "Kineto trace; give the directory of the Chakra .et protobuf files it was dumped from "
                     "(trace.format chakra)");
  } else {
    throw TraceError(key + ": " + path + ": not a Kineto/Chrome trace (no traceEvents array)");
  }
  if (t.doc.is_object() && t.doc.contains("deviceProperties") && t.doc["deviceProperties"].is_array() &&
      !t.doc["deviceProperties"].empty() && t.doc["deviceProperties"][0].is_object()) {
    const json& d = t.doc["deviceProperties"][0];
    t.device_name = str(d, "name");
    t.sm_count = static_cast<int>(int_or(d, "numSms", 0));
  }
  if (t.doc.is_object() && t.doc.contains("distributedInfo") && t.doc["distributedInfo"].is_object()) {
    t.rank = int_or(t.doc["distributedInfo"], "rank", -1);
    t.world_size = int_or(t.doc["distributedInfo"], "world_size", -1);
  }
  for (const json& e : *events) {
    if (!e.is_object() || str(e, "ph") != "X") continue;
    const std::string cat = str(e, "cat");
    const std::string name = str(e, "name");
    const double ts = num(e, "ts"), dur = num(e, "dur");
    if (!std::isfinite(ts) || !(dur >= 0) || !std::isfinite(dur)) {
      if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") {
        throw TraceError(key + ": " + path + ": GPU event " + name + " lacks ts/dur");
      }
      continue;
    }
    if ((cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") && dur > kMaxGpuEventUs) {
      throw TraceError(key + ": " + path + ": GPU event " + name + " lasts " + std::to_string(dur) +
                       " us, more than the 1e9 us (1000 s) a kernel may");
    }
    const int64_t tid = int_or(e, "tid", -1);
    if (cat == "kernel" || cat == "gpu_memset" || cat == "gpu_memcpy") {
      GpuEvent g;
      g.ts = ts;
      g.dur = dur;
      g.cat = cat;
      g.name = name;
      g.device = arg_int(e, "device", int_or(e, "pid", 0));
      g.stream = arg_int(e, "stream", 0);
      g.correlation = arg_int(e, "correlation", -1);
      g.external_id = arg_int(e, "External id", -1);
      const auto a = e.find("args");
      g.args = a != e.end() && a->is_object() ? &*a : nullptr;
      t.gpu.push_back(std::move(g));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      Launch l{name, ts, dur, tid, arg_int(e, "External id", -1)};
      if (name.find("Synchronize") != std::string::npos) t.syncs.push_back(l);
      const int64_t c = arg_int(e, "correlation", -1);
      if (c >= 0) t.launches[c] = std::move(l);
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      CpuOp op;
      op.name = name;
      op.ts = ts;
      op.dur = dur;
      op.tid = tid;
      op.external_id = arg_int(e, "External id", -1);
      op.rf_id = arg_int(e, "Record function id", -1);
      op.annotation = cat == "user_annotation";
      const auto a = e.find("args");
      op.args = a != e.end() && a->is_object() ? &*a : nullptr;
      if (const int64_t n = profiler_step_number(name); n >= 0)
        t.profiler_steps.push_back({n, {ts, ts + dur}});
      t.ops.push_back(std::move(op));
    } else if (cat == "gpu_user_annotation" && starts_with(name, "Optimizer.step")) {
      t.optimizer_windows.push_back({ts, ts + dur});
    } else if (cat == "overhead") {
      t.overhead.push_back({ts, ts + dur});
    }
  }
  // By start; a step annotated twice (a cpu_op and a user_annotation of one name) counts once.
  std::stable_sort(
      t.profiler_steps.begin(), t.profiler_steps.end(),
      [](const ProfilerStep& a, const ProfilerStep& b) { return a.window.begin < b.window.begin; });
  std::set<int64_t> seen;
  t.profiler_steps.erase(
      std::remove_if(t.profiler_steps.begin(), t.profiler_steps.end(),
                     [&](const ProfilerStep& ps) { return !seen.insert(ps.number).second; }),
      t.profiler_steps.end());
  return t;
}

std::string canonical_category(const std::string& cat) {
  static const std::map<std::string, std::string, std::less<>> old = {
      {"Kernel", "kernel"},        {"Memcpy", "gpu_memcpy"},  {"Memset", "gpu_memset"},
      {"Runtime", "cuda_runtime"}, {"Driver", "cuda_driver"}, {"Operator", "cpu_op"}};
  const auto it = old.find(cat);
  return it == old.end() ? cat : it->second;
}

std::vector<GpuEvent> device_events(const KinetoTrace& trace, int device, const std::string& path,
                                    const std::string& key) {
  std::map<int64_t, std::vector<GpuEvent>> by_device;
  for (const GpuEvent& g : trace.gpu) by_device[g.device].push_back(g);
  if (by_device.empty()) {
    // Say what the trace holds instead: its most frequent categories.
    std::vector<std::pair<int64_t, std::string>> cats;
    for (const auto& [c, k] : trace.categories) cats.emplace_back(-k, c);
    std::sort(cats.begin(), cats.end());
    std::string seen;
    for (size_t i = 0; i < cats.size() && i < 6; ++i)
      seen += (i > 0 ? ", " : "") + cats[i].second + " " + std::to_string(-cats[i].first);
    const bool mtia =
        std::any_of(cats.begin(), cats.end(), [](const auto& c) { return starts_with(c.second, "mtia"); });
    throw TraceError(key + ": " + path +
                     ": no GPU kernel events (kernel, gpu_memcpy, gpu_memset; Kernel, Memcpy, Memset in 2021 "
                     "traces) to replay; the trace has " +
                     (seen.empty() ? std::string("no complete events") : seen) +
                     (mtia ? ": an MTIA accelerator trace, which this reader does not replay"
                           : ": a CPU-only profile (no GPU activity was recorded)"));
  }
  int64_t chosen = device;
  if (chosen < 0) {
    if (by_device.size() > 1) {
      throw TraceError(key + ": " + path + ": GPU events of " + std::to_string(by_device.size()) +
                       " devices; choose one");
    }
    chosen = by_device.begin()->first;
  }
  const auto it = by_device.find(chosen);
  if (it == by_device.end())
    throw TraceError(key + ": " + path + ": no GPU events on device " + std::to_string(chosen));
  return it->second;
}

StepWindow step_window(const KinetoTrace& trace, int device, int64_t step, const std::string& path,
                       const std::string& key) {
  std::vector<GpuEvent> all = device_events(trace, device, path, key);
  std::stable_sort(all.begin(), all.end(), [](const GpuEvent& a, const GpuEvent& b) { return a.ts < b.ts; });
  StepWindow out;
  out.profiler_steps = static_cast<int>(trace.profiler_steps.size());
  if (trace.profiler_steps.empty()) {
    if (step >= 0) {
      throw TraceError(key + ": " + path + ": trace.step " + std::to_string(step) +
                       ": the trace has no ProfilerStep annotations (it is one step: leave trace.step out)");
    }
    out.events = std::move(all);
    return out;
  }
  // The GPU events launched inside each ProfilerStep window (by the launch's correlation).
  const std::vector<ProfilerStep>& steps = trace.profiler_steps;
  std::vector<std::vector<GpuEvent>> per_step(steps.size());
  for (const GpuEvent& g : all) {
    const auto l = trace.launches.find(g.correlation);
    if (l == trace.launches.end()) continue;
    const double at = l->second.ts;
    // The last window that starts at or before the launch (windows are sorted by start).
    const auto it = std::upper_bound(steps.begin(), steps.end(), at,
                                     [](double t, const ProfilerStep& ps) { return t < ps.window.begin; });
    if (it == steps.begin()) continue;
    const auto k = static_cast<size_t>(it - steps.begin()) - 1;
    if (at <= steps[k].window.end) per_step[k].push_back(g);
  }
  size_t chosen = per_step.size();
  std::string present;
  for (size_t k = 0; k < per_step.size(); ++k) {
    const int64_t n = trace.profiler_steps[k].number;
    if (k < 16)
      present += (k > 0 ? ", " : "") + std::to_string(n) + (per_step[k].empty() ? " (no GPU work)" : "");
    if (k == 16) present += ", ...";
    if (per_step[k].empty()) {
      ++out.empty_steps;
    } else if (step < 0 || n == step) {
      chosen = k;
    }
  }
  if (chosen == per_step.size()) {
    throw TraceError(key + ": " + path + ": " +
                     (step >= 0
                          ? "trace.step " + std::to_string(step) + " is not a ProfilerStep with GPU work"
                          : std::string("no GPU events launched inside any ProfilerStep")) +
                     "; the trace's ProfilerSteps: " + present);
  }
  out.profiler_step = trace.profiler_steps[chosen].number;
  out.events = std::move(per_step[chosen]);
  if (chosen > 0) {
    for (const GpuEvent& g : per_step[chosen - 1])
      out.previous_end = std::max(out.previous_end, g.ts + g.dur);
  }
  return out;
}

bool is_nccl(const std::string& kernel_name) {
  std::string lower = kernel_name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("nccl") != std::string::npos;
}

PhaseOf::PhaseOf(const KinetoTrace& trace) : trace_(trace) {
  for (const CpuOp& op : trace.ops) {
    if (!op.annotation && starts_with(op.name, "autograd::engine::evaluate_function"))
      autograd_threads_.insert(op.tid);
  }
}

Phase PhaseOf::operator()(const GpuEvent& event) const {
  for (const Interval& w : trace_.optimizer_windows) {
    if (event.ts >= w.begin && event.ts < w.end) return Phase::optimizer;
  }
  const auto l = trace_.launches.find(event.correlation);
  return l != trace_.launches.end() && autograd_threads_.count(l->second.tid) != 0 ? Phase::backward
                                                                                   : Phase::forward;
}

}  // namespace ct::trace::kineto

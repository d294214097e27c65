// Kernel samples from a profiled step and the compute-model fit (rules in calibrate.h).
#include "models/trace/calibrate.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>

#include "models/hardware/compute_fit.h"
#include "models/hardware/gpu_catalog.h"
#include "models/trace/et_graph.h"
#include "models/trace/kineto_events.h"
#include "models/trace/op_work.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using nlohmann::json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

json error_stats_json(const hardware::ErrorStats& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"max", s.max}};
}

// The range a family's samples cover, the only domain where its fit was checked.
template <typename Sample, typename Size>
json covered(const std::vector<Sample>& samples, const char* size_name, Size size, double Sample::*seconds) {
  if (samples.empty()) return json::object();
  double lo = size(samples.front()), hi = lo, tlo = samples.front().*seconds, thi = tlo;
  for (const Sample& s : samples) {
    lo = std::min(lo, size(s));
    hi = std::max(hi, size(s));
    tlo = std::min(tlo, s.*seconds);
    thi = std::max(thi, s.*seconds);
  }
  return {{size_name, {lo, hi}}, {"seconds", {tlo, thi}}};
}

json family_json(bool fitted, size_t samples, size_t kernels, const hardware::FamilyErrors& e,
                 double objective) {
  json j = {{"fitted", fitted}, {"samples", samples}, {"operators", kernels}};
  if (fitted) {
    j["fit_mean_squared_log_error"] = objective;
    j["abs_rel_error_fit_set"] = error_stats_json(e.fit);
    j["abs_rel_error_holdout"] = error_stats_json(e.holdout);
  } else {
    j["reason"] = "no samples of this family in the trace: the base calibration is kept";
  }
  return j;
}

struct Collected {
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::vector<double>> gemm;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>,
           std::pair<std::vector<double>, std::vector<double>>>
      attention;
  std::map<std::pair<std::string, int64_t>, std::vector<double>> memory;
  std::map<std::string, int> skipped;  // reason -> operators
  size_t gemm_ops = 0, attention_ops = 0, memory_ops = 0;
};

}  // namespace

std::string catalog_gpu_for(const std::string& device_name, double memory_bytes) {
  const auto has = [&](const char* s) { return device_name.find(s) != std::string::npos; };
  if (has("H200")) return "H200-SXM";
  if (has("H100")) return "H100-SXM";
  if (has("H800")) return "H800";
  if (has("B200")) return "B200";
  if (has("A100")) return memory_bytes > 60e9 ? "A100-80GB" : "A100-40GB";
  return "";
}

namespace {

// The vendor a device name belongs to, "" when the name does not say (Kineto's
// deviceProperties name, or a ROCm trace's).
std::string vendor_of(const std::string& device_name) {
  const auto has = [&](const char* s) { return device_name.find(s) != std::string::npos; };
  if (has("NVIDIA") || has("Tesla") || has("GeForce") || !catalog_gpu_for(device_name, 0).empty())
    return "NVIDIA";
  if (has("AMD") || has("Instinct") || has("Radeon") || has("MI300") || has("MI250") || has("gfx9"))
    return "AMD";
  if (has("Gaudi") || has("Intel")) return "Intel";
  return "";
}

// The catalog GPU the fit starts from: --gpu, else the trace's device. A trace recorded on
// another vendor's GPU than --gpu is refused (every catalog GPU is NVIDIA's: the fit would
// describe neither); another NVIDIA generation is a warning.
std::string base_gpu(const kineto::KinetoTrace& kt, const CalibrateOptions& options,
                     std::vector<std::string>& warnings) {
  double memory_bytes = 0;
  if (kt.doc.is_object() && kt.doc.contains("deviceProperties") && kt.doc["deviceProperties"].is_array() &&
      !kt.doc["deviceProperties"].empty() && kt.doc["deviceProperties"][0].is_object()) {
    memory_bytes = kt.doc["deviceProperties"][0].value("totalGlobalMem", 0.0);
  }
  std::string base = options.gpu;
  if (base.empty()) {
    base = catalog_gpu_for(kt.device_name, memory_bytes);
    if (base.empty()) {
      throw TraceError("--gpu: the trace's device '" + kt.device_name +
                       "' is not a catalog GPU; name the base GPU with --gpu");
    }
  }
  if (hardware::find_gpu(base) == nullptr) {
    std::string names;
    for (const auto& n : hardware::gpu_names()) names += (names.empty() ? "" : ", ") + n;
    throw TraceError("--gpu: unknown GPU '" + base + "', expected one of " + names);
  }
  const std::string vendor = vendor_of(kt.device_name);
  if (!vendor.empty() && vendor != "NVIDIA") {
    throw TraceError("--gpu " + base + ": the trace's kernels ran on '" + kt.device_name + "' (" + vendor +
                     "); a GPU file describes the kernels of the GPU they ran on, and the catalog has no " +
                     vendor + " GPU to start the fit from");
  }
  const std::string recorded = catalog_gpu_for(kt.device_name, memory_bytes);
  if (!options.gpu.empty() && !recorded.empty() && recorded != base) {
    warnings.push_back("the trace's kernels ran on '" + kt.device_name + "' (" + recorded +
                       "), the file is for " + base + ": its efficiencies are the " + recorded +
                       "'s; use --gpu " + recorded + " unless that is meant");
  }
  if (kt.device_name.empty()) {
    warnings.push_back("the trace names no device (no deviceProperties): the kernels are taken as " + base +
                       "'s");
  }
  return base;
}

// One operator's GPU time filed under its family's shape, or under the reason it is skipped.
void classify(const OpView& view, const std::string& op_name,
              const std::vector<const kineto::GpuEvent*>& events, Collected& c) {
  double seconds = 0;
  for (const kineto::GpuEvent* e : events) seconds += e->dur * 1e-6;
  const OpWork w = op_work(view);
  if (w.kind == OpWork::Kind::none) {
    ++c.skipped["not a GEMM, attention or memory-bound op (" + op_name + ")"];
  } else if (!w.modelled) {
    ++c.skipped[op_name + ": " + w.why];
  } else if (w.kind == OpWork::Kind::gemm) {
    c.gemm[{w.m, w.n, w.k, w.count}].push_back(seconds);
    ++c.gemm_ops;
  } else if (w.kind == OpWork::Kind::memory) {
    if (events.size() != 1) {
      ++c.skipped[op_name + ": launched " + std::to_string(events.size()) +
                  " GPU events (one-kernel ops only)"];
    } else {
      c.memory[{w.memory_op, static_cast<int64_t>(w.bytes)}].push_back(seconds);
      ++c.memory_ops;
    }
  } else if (!w.causal) {
    ++c.skipped[op_name + ": not causal (the attention fit is causal-only)"];
  } else {
    auto& [fwd, bwd] = c.attention[{w.batch, w.heads, w.seq, w.head_dim}];
    (w.kind == OpWork::Kind::attention_forward ? fwd : bwd).push_back(seconds);
    ++c.attention_ops;
  }
}

// Every operator with GPU events, seen through the execution trace when given (matched by
// rf_id), else through Kineto's own shapes, classified.
Collected collect(const kineto::KinetoTrace& kt, const std::string& kineto_path,
                  const CalibrateOptions& options) {
  std::unordered_map<int64_t, size_t> op_by_external;
  for (size_t i = 0; i < kt.ops.size(); ++i) {
    if (kt.ops[i].external_id >= 0) op_by_external.emplace(kt.ops[i].external_id, i);
  }
  EtGraph et;
  std::unordered_map<int64_t, size_t> node_by_rf;
  if (!options.execution_trace.empty()) {
    et = read_execution_trace(options.execution_trace);
    for (size_t i = 0; i < et.nodes.size(); ++i) {
      if (et.nodes[i].rf_id > 0) node_by_rf.emplace(et.nodes[i].rf_id, i);
    }
  }
  std::map<size_t, std::vector<const kineto::GpuEvent*>> events_of_op;
  const std::vector<kineto::GpuEvent> gpu_events =
      kineto::device_events(kt, options.device, kineto_path, "trace.path");
  for (const kineto::GpuEvent& e : gpu_events) {
    const auto l = kt.launches.find(e.correlation);
    const auto op = op_by_external.find(l != kt.launches.end() ? l->second.external_id : e.external_id);
    if (op != op_by_external.end()) events_of_op[op->second].push_back(&e);
  }
  Collected c;
  size_t matched = 0;
  for (const auto& [index, events] : events_of_op) {
    const kineto::CpuOp& op = kt.ops[index];
    const auto node = op.rf_id > 0 ? node_by_rf.find(op.rf_id) : node_by_rf.end();
    if (node == node_by_rf.end()) {
      classify(kineto_op_view(op), op.name, events, c);
      continue;
    }
    const EtNode& n = et.nodes[node->second];
    if (n.op.name != op.name) {
      throw TraceError("trace.execution_trace: " + options.execution_trace + ": node id " +
                       std::to_string(n.id) + " '" + n.op.name + "' has rf_id " + std::to_string(n.rf_id) +
                       " but in " + kineto_path + " Record function id " + std::to_string(n.rf_id) + " is '" +
                       op.name + "': the traces are not of the same run");
    }
    ++matched;
    classify(n.op, op.name, events, c);
  }
  if (!options.execution_trace.empty() && matched == 0) {
    throw TraceError("trace.execution_trace: " + options.execution_trace +
                     ": no node's rf_id matches a Record function id of " + kineto_path +
                     ": the traces are not of the same run");
  }
  return c;
}

// Why no sample was usable, from the skip reasons: fp32 GEMMs (the fit is of 16-bit tensor-core
// kernels), shapes missing (record_shapes off), or the most common reasons.
std::string why_nothing_usable(const Collected& c, const CalibrateOptions& options) {
  int fp32 = 0, no_shapes = 0, total = 0;
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [why, n] : c.skipped) {
    total += n;
    if (why.find("operands are not 16-bit") != std::string::npos) fp32 += n;
    if (why.find("no operand shapes") != std::string::npos || why.find("sizes unknown") != std::string::npos)
      no_shapes += n;
    reasons.emplace_back(n, why);
  }
  if (fp32 > 0) {
    return ": " + std::to_string(fp32) +
           " GEMM operator(s) have fp32 operands, and the compute model is fitted on 16-bit (bf16/fp16) "
           "tensor-core GEMMs; profile the step in bf16 autocast to calibrate it";
  }
  if (total == 0 || no_shapes * 2 >= total) {
    return options.execution_trace.empty()
               ? " (record_shapes off? profile with record_shapes=True or give the execution trace)"
               : " (the execution trace gives no operand shapes for the kernels' operators)";
  }
  std::sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = "; skipped: ";
  for (size_t i = 0; i < reasons.size() && i < 3; ++i)
    out += (i ? "; " : "") + reasons[i].second + " (" + std::to_string(reasons[i].first) + ")";
  return out;
}

// The fit's samples: the median time of each shape (attention only with both passes).
hardware::KernelMeasurements samples_of(Collected& c, const kineto::KinetoTrace& kt,
                                        const std::string& kineto_path, const CalibrateOptions& options) {
  hardware::KernelMeasurements data;
  data.device = kt.device_name;
  data.sm_count = kt.sm_count;
  for (const auto& [key, times] : c.gemm) {
    const auto& [m, n, k, count] = key;
    data.gemm.push_back({m, n, k, median(times), count});
  }
  for (const auto& [key, passes] : c.attention) {
    const auto& [b, h, s, d] = key;
    if (passes.first.empty() || passes.second.empty()) {
      ++c.skipped["attention shape without both forward and backward"];
      continue;
    }
    const double fwd = median(passes.first);
    data.attention.push_back({b, h, s, d, fwd, fwd + median(passes.second)});
  }
  for (const auto& [key, times] : c.memory) {
    hardware::ElementwiseSample e;
    e.op = key.first;
    e.op_class = op_work(OpView{"aten::" + key.first, "", {}, {}, false}).memory_class;
    e.bytes_moved = key.second;
    e.seconds = median(times);
    data.elementwise.push_back(e);
  }
  if (data.gemm.empty() && data.attention.empty() && data.elementwise.empty()) {
    throw TraceError("trace.path: " + kineto_path +
                     ": no GEMM, attention or element-wise kernel with usable " + "shapes" +
                     why_nothing_usable(c, options));
  }
  return data;
}

// The GPU file's "fit" section: per family, samples, operators, errors and objectives; what
// the samples cover; the skipped operators by reason.
json fit_json(const hardware::KernelMeasurements& data, const Collected& c,
              const hardware::ComputeModel& model) {
  const hardware::ErrorTable errors = hardware::evaluate_errors(model, data);
  const hardware::FitObjectives objectives = hardware::fit_objectives(model, data);
  json skipped = json::object();
  for (const auto& [why, n] : c.skipped) skipped[why] = n;
  return {
      {"gemm", family_json(!data.gemm.empty(), data.gemm.size(), c.gemm_ops, errors.gemm, objectives.gemm)},
      {"attention_fwd", family_json(!data.attention.empty(), data.attention.size(), c.attention_ops,
                                    errors.attention_fwd, objectives.attention)},
      {"attention_fwdbwd", family_json(!data.attention.empty(), data.attention.size(), c.attention_ops,
                                       errors.attention_fwdbwd, objectives.attention)},
      {"elementwise", family_json(!data.elementwise.empty(), data.elementwise.size(), c.memory_ops,
                                  errors.elementwise, objectives.elementwise)},
      {"holdout_rule", "entry i of each family held out when (i + i/4) % 4 == 3 (compute_fit.h)"},
      {"covered",
       {{"gemm", covered(
                     data.gemm, "flops",
                     [](const hardware::GemmSample& g) {
                       return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                              static_cast<double>(g.k) * static_cast<double>(g.count);
                     },
                     &hardware::GemmSample::seconds)},
        {"attention", covered(
                          data.attention, "seq",
                          [](const hardware::AttentionSample& a) { return static_cast<double>(a.seq); },
                          &hardware::AttentionSample::fwd_seconds)},
        {"elementwise",
         covered(
             data.elementwise, "bytes",
             [](const hardware::ElementwiseSample& x) { return static_cast<double>(x.bytes_moved); },
             &hardware::ElementwiseSample::seconds)}}},
      {"skipped_operators", skipped}};
}

}  // namespace

CalibrateResult calibrate(const std::string& kineto_path, const CalibrateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const kineto::KinetoTrace kt = kineto::read_kineto(kineto_path, "trace.path");
  std::vector<std::string> warnings;
  const std::string base = base_gpu(kt, options, warnings);
  const hardware::GpuSpec& gpu = hardware::gpu(base);
  Collected c = collect(kt, kineto_path, options);

  CalibrateResult out;
  out.samples = samples_of(c, kt, kineto_path, options);
  const hardware::KernelMeasurements& data = out.samples;
  GpuFile& file = out.file;
  file.base_gpu = base;
  file.calibration = hardware::fit_calibration_from(data, gpu, hardware::Calibration::h200());
  file.fit = fit_json(data, c, hardware::ComputeModel(gpu, file.calibration));
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  file.provenance = {
      {"created_by", "clustertwin calibrate"},
      {"trace", kineto_path},
      {"execution_trace", options.execution_trace},
      {"device_name", kt.device_name},
      {"device_sm_count", kt.sm_count},
      {"catalog_sm_count", gpu.sm_count},
      {"start", "Calibration::h200() (the built-in fit to shared/calibration/h200-kernels.json)"},
      {"kernel_times", "Kineto GPU kernel durations: GPU execution only, no CPU launch cost"},
      {"warnings", warnings},
      {"wall_s", out.wall_s}};
  return out;
}

}  // namespace ct::trace

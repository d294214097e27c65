// GPU file writing and checked reading (format in gpu_file.h).
#include "models/trace/gpu_file.h"

#include <fstream>
#include <stdexcept>

#include "models/hardware/gpu_catalog.h"
#include "models/trace/file_io.h"
#include "models/trace/kineto_events.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(std::string key, std::string path) : key_(std::move(key)), path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(key_ + ": " + path_ + ": " + what);
  }
  const json& object(const json& parent, const char* name, const std::string& at) const {
    const auto it = parent.find(name);
    if (it == parent.end() || !it->is_object()) fail(at + name + ": missing, expected an object");
    return *it;
  }
  double number(const json& parent, const char* name, const std::string& at) const {
    const auto it = parent.find(name);
    if (it == parent.end() || !it->is_number()) fail(at + name + ": missing, expected a number");
    return it->get<double>();
  }
  int integer(const json& parent, const char* name, const std::string& at) const {
    const auto it = parent.find(name);
    if (it == parent.end() || !it->is_number_integer()) fail(at + name + ": missing, expected an integer");
    return it->get<int>();
  }

 private:
  std::string key_, path_;
};

json memory_class_json(const hardware::Calibration::MemoryClass& c) {
  return {{"launch_s", c.launch_s}, {"eff", c.eff}};
}

}  // namespace

json calibration_json(const hardware::Calibration& cal) {
  const auto& g = cal.gemm;
  const auto& a = cal.attention;
  const auto& e = cal.elementwise;
  return {{"gemm",
           {{"launch_s", g.launch_s},
            {"overlap_p", g.overlap_p},
            {"eff_max", g.eff_max},
            {"k_half", g.k_half},
            {"wave_gamma", g.wave_gamma},
            {"throttle_flops", g.throttle_flops},
            {"throttle_delta", g.throttle_delta},
            {"mem_eff", g.mem_eff},
            {"tile_m", g.tile_m},
            {"tile_n", g.tile_n}}},
          {"attention",
           {{"launch_s", a.launch_s},
            {"overlap_p", a.overlap_p},
            {"fwd_eff_max", a.fwd_eff_max},
            {"fwd_seq_half", a.fwd_seq_half},
            {"bwd_eff_max", a.bwd_eff_max},
            {"bwd_seq_half", a.bwd_seq_half}}},
          {"elementwise",
           {{"overlap_p", e.overlap_p},
            {"streaming", memory_class_json(e.streaming)},
            {"normalization", memory_class_json(e.normalization)},
            {"softmax", memory_class_json(e.softmax)}}}};
}

json gpu_file_json(const GpuFile& file) {
  return {{"format", "clustertwin-gpu"},
          {"version", kGpuFileVersion},
          {"base_gpu", file.base_gpu},
          {"calibration", calibration_json(file.calibration)},
          {"fit", file.fit},
          {"provenance", file.provenance}};
}

void write_gpu_file(const std::string& path, const GpuFile& file) {
  std::ofstream out(path);
  if (!out) throw TraceError(path + ": cannot write");
  out << gpu_file_json(file).dump(1) << "\n";
  if (!out) throw TraceError(path + ": write error");
}

GpuFile read_gpu_file(const std::string& path, const std::string& key) {
  const json doc = kineto::parse_json_text(detail::read_maybe_gzip(path, key, "input_file_bytes"), path, key);
  const Reader r(key, path);
  if (!doc.is_object()) r.fail("expected a JSON object");
  if (doc.value("format", "") != "clustertwin-gpu")
    r.fail("format: expected \"clustertwin-gpu\" (a file written by clustertwin calibrate)");
  const int version = r.integer(doc, "version", "");
  if (version != kGpuFileVersion) {
    r.fail("version: got " + std::to_string(version) + ", this build reads version " +
           std::to_string(kGpuFileVersion));
  }
  GpuFile f;
  if (!doc.contains("base_gpu") || !doc["base_gpu"].is_string())
    r.fail("base_gpu: missing, expected a catalog GPU name");
  f.base_gpu = doc["base_gpu"].get<std::string>();
  if (hardware::find_gpu(f.base_gpu) == nullptr) {
    std::string names;
    for (const auto& n : hardware::gpu_names()) names += (names.empty() ? "" : ", ") + n;
    r.fail("base_gpu: unknown GPU '" + f.base_gpu + "', expected one of " + names);
  }
  const json& cal = r.object(doc, "calibration", "");
  const json& g = r.object(cal, "gemm", "calibration.");
  const json& a = r.object(cal, "attention", "calibration.");
  const json& e = r.object(cal, "elementwise", "calibration.");
  hardware::Calibration& c = f.calibration;
  const std::string gp = "calibration.gemm.", ap = "calibration.attention.", ep = "calibration.elementwise.";
  c.gemm.launch_s = r.number(g, "launch_s", gp);
  c.gemm.overlap_p = r.number(g, "overlap_p", gp);
  c.gemm.eff_max = r.number(g, "eff_max", gp);
  c.gemm.k_half = r.number(g, "k_half", gp);
  c.gemm.wave_gamma = r.number(g, "wave_gamma", gp);
  c.gemm.throttle_flops = r.number(g, "throttle_flops", gp);
  c.gemm.throttle_delta = r.number(g, "throttle_delta", gp);
  c.gemm.mem_eff = r.number(g, "mem_eff", gp);
  c.gemm.tile_m = r.integer(g, "tile_m", gp);
  c.gemm.tile_n = r.integer(g, "tile_n", gp);
  c.attention.launch_s = r.number(a, "launch_s", ap);
  c.attention.overlap_p = r.number(a, "overlap_p", ap);
  c.attention.fwd_eff_max = r.number(a, "fwd_eff_max", ap);
  c.attention.fwd_seq_half = r.number(a, "fwd_seq_half", ap);
  c.attention.bwd_eff_max = r.number(a, "bwd_eff_max", ap);
  c.attention.bwd_seq_half = r.number(a, "bwd_seq_half", ap);
  c.elementwise.overlap_p = r.number(e, "overlap_p", ep);
  for (auto [name, cls] : {std::pair{"streaming", &c.elementwise.streaming},
                           std::pair{"normalization", &c.elementwise.normalization},
                           std::pair{"softmax", &c.elementwise.softmax}}) {
    const json& m = r.object(e, name, ep);
    cls->launch_s = r.number(m, "launch_s", ep + name + ".");
    cls->eff = r.number(m, "eff", ep + name + ".");
  }
  try {
    hardware::validate(c);
  } catch (const std::invalid_argument& ex) {
    r.fail(std::string("calibration: ") + ex.what());
  }
  if (doc.contains("fit")) f.fit = doc["fit"];
  if (doc.contains("provenance")) f.provenance = doc["provenance"];
  return f;
}

}  // namespace ct::trace

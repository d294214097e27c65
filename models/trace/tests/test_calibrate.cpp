// Calibration from the profiled GPT-1.42B H200 step: samples, fit errors, the GPU file round
// trip (calibrate -> gpu.json -> cluster.gpu_file in a scenario -> run), and the GPU file's
// errors, which name the key and the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/runner.h"
#include "models/trace/calibrate.h"
#include "models/trace/gpu_file.h"
#include "models/trace/tests/trace_test_util.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::temp_dir;

const std::string kKineto = "tests/data/traces/kineto/kineto_gpt1.3b_h200.json.gz";
const std::string kEt = "tests/data/traces/kineto/pytorch_et_gpt1.3b_h200.json.gz";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::string problems_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const scenario::ScenarioError& e) {
    std::string all;
    for (const auto& p : e.problems()) all += p + "\n";
    return all;
  }
  return "(no error)";
}

const CalibrateResult& fitted() {
  static const CalibrateResult r = [] {
    CalibrateOptions o;
    o.execution_trace = kEt;
    return calibrate(kKineto, o);
  }();
  return r;
}

void print_family(const char* name, const json& f) {
  if (!f.at("fitted").get<bool>()) {
    std::printf("  %-17s not fitted\n", name);
    return;
  }
  const json& a = f.at("abs_rel_error_fit_set");
  const json& h = f.at("abs_rel_error_holdout");
  std::printf(
      "  %-17s %2d shapes (%3d ops)  fit mean %5.1f%% max %5.1f%%  hold-out n=%d mean %5.1f%% max %5.1f%%\n",
      name, f.at("samples").get<int>(), f.at("operators").get<int>(), 100 * a.at("mean").get<double>(),
      100 * a.at("max").get<double>(), h.at("count").get<int>(), 100 * h.at("mean").get<double>(),
      100 * h.at("max").get<double>());
}

TEST(Calibrate, FitsTheProfiledH200Step) {
  const CalibrateResult& r = fitted();
  EXPECT_EQ(r.file.base_gpu, "H200-SXM");  // from the trace's "NVIDIA H200"
  EXPECT_GE(r.samples.gemm.size(), 8U);
  EXPECT_EQ(r.samples.attention.size(), 1U);  // one shape: [8, 16, 2048, 128], causal
  EXPECT_GE(r.samples.elementwise.size(), 8U);
  const json& fit = r.file.fit;
  std::printf("[ calibrate ] %s + ET in %.2f s wall\n", kKineto.c_str(), r.wall_s);
  for (const char* family : {"gemm", "attention_fwd", "attention_fwdbwd", "elementwise"})
    print_family(family, fit.at(family));
  const auto& c = r.file.calibration;
  std::printf(
      "  gemm L %.2f us e_max %.3f; attention L %.2f us e_fwd %.3f e_bwd %.3f; streaming L %.2f us e %.3f\n",
      c.gemm.launch_s * 1e6, c.gemm.eff_max, c.attention.launch_s * 1e6, c.attention.fwd_eff_max,
      c.attention.bwd_eff_max, c.elementwise.streaming.launch_s * 1e6, c.elementwise.streaming.eff);
  for (const char* family : {"gemm", "attention_fwd", "attention_fwdbwd", "elementwise"}) {
    EXPECT_TRUE(fit.at(family).at("fitted").get<bool>()) << family;
  }
  // Measured: GEMM fit-set mean 1.2% (hold-out 2.3%, 3 shapes); attention is one shape (exact);
  // element-wise mean 34%: strided copies and cat run at ~1 TB/s, in-place adds and fills at
  // ~4.5 TB/s, and the model has one bandwidth per class and no layout term.
  EXPECT_LT(fit.at("gemm").at("abs_rel_error_fit_set").at("mean").get<double>(), 0.03);
  EXPECT_LT(fit.at("gemm").at("abs_rel_error_holdout").at("max").get<double>(), 0.06);
  EXPECT_LT(fit.at("attention_fwdbwd").at("abs_rel_error_fit_set").at("max").get<double>(), 0.01);
  EXPECT_LT(fit.at("elementwise").at("abs_rel_error_fit_set").at("mean").get<double>(), 0.40);
  // Kineto times are GPU execution only: the fitted GEMM floor is the GPU's own, well below the
  // built-in (CUDA-event, per-call) 23.7 us.
  EXPECT_LT(c.gemm.launch_s, hardware::Calibration::h200().gemm.launch_s);
  EXPECT_EQ(r.file.provenance.at("device_name"), "NVIDIA H200");

  // Kineto only: shapes from record_shapes; element-wise samples only from in-place ops.
  const CalibrateResult k = calibrate(kKineto);
  EXPECT_EQ(k.samples.gemm.size(), r.samples.gemm.size());
  EXPECT_EQ(k.samples.attention.size(), 1U);
  EXPECT_LT(k.samples.elementwise.size(), r.samples.elementwise.size());
  for (const auto& e : k.samples.elementwise) EXPECT_EQ(e.op.back(), '_') << e.op;
}

TEST(Calibrate, GpuFileRoundTripThroughAScenario) {
  const fs::path dir = temp_dir("ct_calibrate_test", "roundtrip");
  const std::string path = (dir / "h200.json").string();
  write_gpu_file(path, fitted().file);
  const GpuFile back = read_gpu_file(path);
  EXPECT_EQ(back.base_gpu, "H200-SXM");
  EXPECT_EQ(calibration_json(back.calibration), calibration_json(fitted().file.calibration));

  // The trace scenario with the file: the ET path runs with the fitted model.
  scenario::Config tc = scenario::to_config(
      scenario::read_document("scenarios/trace-kineto-h200.yaml", {"cluster.gpu_file=" + path}));
  scenario::check_config(tc);
  const json tr = scenario::run(tc);
  EXPECT_EQ(tr.at("trace").at("execution_trace").at("compute_model"), path);
  EXPECT_GT(tr.at("step_time_s").get<double>(), 0.3);

  // A training job of the same model: the fitted parameters replace the built-in ones.
  json doc = {
      {"name", "h200-gpt1.4b"},
      {"cluster",
       {{"gpu", "H200-SXM"},
        {"nodes", 1},
        {"gpus_per_node", 1},
        {"nics_per_node", 1},
        {"fabric", {{"topology", "rail_optimized"}, {"tiers", 2}, {"switch_radix", 8}}}}},
      {"network", {{"mode", "analytical"}}},
      {"training_job",
       {{"model", {{"layers", 24}, {"hidden", 2048}, {"heads", 16}, {"seq_length", 2048}, {"vocab", 50304}}},
        {"global_batch_size", 8},
        {"micro_batch_size", 8},
        {"parallelism", {{"zero_stage", 0}}},
        {"runtime", {{"recompute_granularity", "none"}}}}}};
  scenario::Config builtin = scenario::to_config(doc);
  scenario::check_config(builtin);
  doc["cluster"]["gpu_file"] = path;
  scenario::Config with_file = scenario::to_config(doc);
  scenario::check_config(with_file);
  EXPECT_EQ(scenario::node_spec(with_file).compute_calibration.gemm.launch_s, back.calibration.gemm.launch_s);
  const double t_builtin = scenario::run(builtin).at("step_time_s").get<double>();
  const double t_file = scenario::run(with_file).at("step_time_s").get<double>();
  std::printf(
      "[ calibrate ] GPT-1.42B training_job on one H200: built-in calibration %.4f s, fitted gpu_file %.4f s "
      "(unprofiled measured 0.3047 s)\n",
      t_builtin, t_file);
  EXPECT_NE(t_builtin, t_file);
  fs::remove_all(dir);
}

TEST(Calibrate, GpuFileErrorsNameTheKeyAndFile) {
  const fs::path dir = temp_dir("ct_calibrate_test", "errors");
  const std::string good = (dir / "good.json").string();
  write_gpu_file(good, fitted().file);
  const json base = json::parse(std::ifstream(good));
  const auto variant = [&](const std::string& name, const std::function<void(json&)>& edit) {
    json d = base;
    edit(d);
    const std::string p = (dir / name).string();
    std::ofstream(p) << d.dump();
    return p;
  };
  EXPECT_NE(
      error_of([] { read_gpu_file("no/such.json"); }).find("cluster.gpu_file: no/such.json: no such file"),
      std::string::npos);
  const std::string corrupt = (dir / "corrupt.json").string();
  std::ofstream(corrupt) << "{\"format\": \"clustertwin-gpu\" \"version\": 1}";
  EXPECT_NE(error_of([&] {
              read_gpu_file(corrupt);
            }).find("cluster.gpu_file: " + corrupt + ": not JSON: syntax error at byte 38"),
            std::string::npos)
      << error_of([&] { read_gpu_file(corrupt); });
  const std::string v2 = variant("v2.json", [](json& d) { d["version"] = 2; });
  EXPECT_NE(error_of([&] { read_gpu_file(v2); }).find(v2 + ": version: got 2, this build reads version 1"),
            std::string::npos);
  const std::string unknown = variant("unknown.json", [](json& d) { d["base_gpu"] = "Z100"; });
  EXPECT_NE(error_of([&] { read_gpu_file(unknown); }).find(unknown + ": base_gpu: unknown GPU 'Z100'"),
            std::string::npos);
  const std::string missing =
      variant("missing.json", [](json& d) { d["calibration"]["gemm"].erase("eff_max"); });
  EXPECT_NE(error_of([&] { read_gpu_file(missing); }).find(missing + ": calibration.gemm.eff_max: missing"),
            std::string::npos);
  const std::string range =
      variant("range.json", [](json& d) { d["calibration"]["attention"]["fwd_eff_max"] = 1.5; });
  EXPECT_NE(error_of([&] {
              read_gpu_file(range);
            }).find(range + ": calibration: Calibration: attention.fwd_eff_max"),
            std::string::npos);
  // Through a scenario: check_config reports the key, the file and the problem.
  const auto check = [](const std::string& gpu, const std::string& file) {
    scenario::Config c = scenario::to_config(scenario::read_document(
        "scenarios/trace-kineto-h200.yaml", {"cluster.gpu=" + gpu, "cluster.gpu_file=" + file}));
    scenario::check_config(c);
  };
  EXPECT_NE(problems_of([&] { check("H200-SXM", v2); }).find("cluster.gpu_file: " + v2 + ": version"),
            std::string::npos);
  EXPECT_NE(problems_of([&] {
              check("H100-SXM", good);
            }).find("cluster.gpu_file: " + good + ": fitted on H200-SXM but cluster.gpu is H100-SXM"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ct::trace

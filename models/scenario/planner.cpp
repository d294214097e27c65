#include "models/scenario/planner.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "models/hardware/gpu_catalog.h"
#include "models/replay/step_model.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/model_presets.h"
#include "models/scenario/runner.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::scenario {
namespace {

using nlohmann::json;

struct Shape {
  int layers;
  int64_t hidden;
  int heads;
};

// GPT-3 (Brown et al. 2020, Table 2.1) and Megatron (Narayanan et al. 2021, Table 1) shapes:
// GELU MLP of 4h, multi-head attention, GPT-2's 50,257-token vocabulary padded to 51,200.
constexpr std::array kShapes{
    Shape{24, 2048, 16},  Shape{32, 2560, 32},   Shape{32, 4096, 32},    Shape{40, 5120, 40},
    Shape{48, 6144, 48},  Shape{48, 8192, 64},   Shape{60, 10240, 80},   Shape{80, 12288, 96},
    Shape{96, 12288, 96}, Shape{96, 16384, 128}, Shape{105, 20480, 128}, Shape{128, 25600, 160},
};
constexpr int kTableSeq = 2048;
constexpr double kShapeTolerance = 0.05;  // |shape's N / asked N - 1| above this is a warning
constexpr double kBatchTolerance = 0.25;  // a layout's global batch within 25% of --batch-tokens

// The scenario the loader checks a model in: one node of the GPU, the model alone.
json model_document(const std::string& gpu, const json& model, int nodes) {
  return {{"cluster", {{"gpu", gpu}, {"nodes", nodes}}},
          {"network", {{"mode", "analytical"}}},
          {"recovery", {{"hot_spares", 0}}},
          {"training_job",
           {{"model", model},
            {"parallelism", {{"data_parallel", 8 * nodes}}},
            {"global_batch_size", 8 * nodes},
            {"micro_batch_size", 1},
            {"steps", 2}}}};
}

// The loader's problems with the model, named from the plan's side ("model.hidden").
workload::ModelSpec checked_model(const std::string& gpu, const json& model) {
  std::vector<std::string> problems;
  const Config c = to_config(model_document(gpu, model, 1), problems);
  std::vector<std::string> mine;
  const std::string prefix = "training_job.model";
  for (const std::string& p : problems) {
    if (p.find(prefix) == std::string::npos) continue;
    std::string text = p;
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at))
      text.replace(at, prefix.size(), "model");
    mine.push_back(text);
  }
  if (!mine.empty()) throw ScenarioError(mine);
  if (!problems.empty()) throw ScenarioError(problems);
  return c.training_job.model;
}

struct ChosenModel {
  json document;  // training_job.model keys as given to the loader
  workload::ModelSpec spec;
  std::string source;
};

ChosenModel nearest_shape(double params, int seq, const std::string& gpu) {
  struct Candidate {
    json model;
    std::string source;
  };
  std::vector<Candidate> candidates;
  for (const ModelPreset& p : model_presets()) {
    if (p.model.contains("moe")) continue;  // the N of 6ND is active parameters: dense only
    json m = {{"preset", p.name}};
    if (seq > 0) m["seq_length"] = seq;
    candidates.push_back({m, "preset " + p.name + " (nearest to --params; " + p.source + ")"});
  }
  for (const Shape& s : kShapes) {
    json m = {{"layers", s.layers},
              {"hidden", s.hidden},
              {"heads", s.heads},
              {"vocab", 51200},
              {"activation", "gelu"},
              {"tied_embeddings", true},
              {"seq_length", seq > 0 ? seq : kTableSeq}};
    candidates.push_back({m,
                          "GPT-3 / Megatron table shape nearest to --params (Brown et al. 2020 Table 2.1, "
                          "Narayanan et al. 2021 Table 1)"});
  }
  std::optional<ChosenModel> best;
  double best_gap = 1e300;
  for (const Candidate& c : candidates) {
    workload::ModelSpec spec = checked_model(gpu, c.model);
    const double gap = std::fabs(std::log(static_cast<double>(workload::active_parameters(spec)) / params));
    if (gap < best_gap) {
      best_gap = gap;
      best = ChosenModel{c.model, spec, c.source};
    }
  }
  return *best;
}

ChosenModel choose_model(const PlanRequest& r) {
  if (r.model.is_null()) return nearest_shape(r.params, r.seq_length, r.gpu);
  if (!r.model.is_object())
    throw ScenarioError({"model: got " + r.model.dump() +
                         ", expected an object of training_job.model keys "
                         "(for instance {\"preset\": \"llama3-70b\"})"});
  json m = r.model;
  if (r.seq_length > 0) m["seq_length"] = r.seq_length;
  ChosenModel out{m, checked_model(r.gpu, m), "given"};
  if (m.contains("preset") && m["preset"].is_string()) {
    const ModelPreset* p = find_model_preset(m["preset"].get<std::string>());
    out.source = "preset " + m["preset"].get<std::string>() +
                 (m.size() > 1 ? " with fields overridden" : "") +
                 (p != nullptr ? " (" + p->source + ")" : "");
  }
  return out;
}

struct Candidate {
  int tp, pp, v;
  int64_t mb;
};

struct Outcome {
  bool off_batch = false;  // its global batch cannot come near the requested one
  bool valid = false;      // a layout the loader accepts for this model
  bool fits = false;
  std::string recompute;
  int64_t global_batch = 0;
  int dp = 0;
  replay::StepResult result;
};

std::vector<Candidate> candidates(const workload::ModelSpec& m, int gpus) {
  std::vector<Candidate> out;
  for (const int tp : {1, 2, 4, 8}) {
    if (m.heads % tp != 0 || (m.kv_heads > 0 && m.kv_heads % tp != 0)) continue;
    for (int pp = 1; pp <= m.layers && pp <= 64; ++pp) {
      if (m.layers % pp != 0 || gpus < tp * pp) continue;
      for (const int64_t mb : {1, 2, 4})
        for (const int v : {1, 2, 4})
          if (v == 1 || (pp > 1 && m.layers % (pp * v) == 0)) out.push_back({tp, pp, v, mb});
    }
  }
  return out;
}

// One layout: selective recompute, or full recompute when selective does not fit. The layout
// may leave a few GPUs idle (DP is what fits).
Outcome evaluate(const Config& base, const Candidate& k, int gpus, double batch_tokens) {
  Outcome o;
  o.dp = gpus / (k.tp * k.pp);
  const int64_t seq = base.training_job.model.seq_length;
  const double per_microbatch = static_cast<double>(seq) * static_cast<double>(int64_t{o.dp} * k.mb);
  int64_t m = std::max<int64_t>(1, std::llround(batch_tokens / per_microbatch));
  // Interleaving needs whole rounds of PP micro-batches (Megatron-LM's schedule).
  if (k.v > 1) m = std::max<int64_t>(k.pp, (m + k.pp / 2) / k.pp * k.pp);
  o.global_batch = m * o.dp * k.mb;
  // The batch is the user's hyperparameter: a layout that cannot come within kBatchTolerance
  // of it (too many replicas for the tokens, or interleaving rounds) is not a candidate.
  if (std::fabs(static_cast<double>(m) * per_microbatch / batch_tokens - 1.0) > kBatchTolerance) {
    o.off_batch = true;
    return o;
  }
  for (const char* recompute : {"selective", "full"}) {
    Config c = base;
    c.training_job.parallelism.tensor_parallel = k.tp;
    c.training_job.parallelism.pipeline_parallel = k.pp;
    c.training_job.parallelism.virtual_pipeline = k.v;
    c.training_job.parallelism.data_parallel = o.dp;
    c.training_job.micro_batch_size = k.mb;
    c.training_job.global_batch_size = o.global_batch;
    c.training_job.runtime.recompute_granularity = recompute;
    try {
      check_config(c);
    } catch (const ScenarioError&) {
      return o;  // not a valid layout of this model (divisibility the loader enforces)
    }
    o.valid = true;
    if (!workload::peak_memory_per_gpu(job_spec(c), memory_options(c)).fits) continue;
    o.fits = true;
    o.recompute = recompute;
    o.result = replay::simulate_step(step_input(c));
    return o;
  }
  return o;
}

json search_layout(const ChosenModel& model, const PlanRequest& r, int nodes, double n_params) {
  const int gpus = nodes * 8;
  const Config base = to_config(model_document(r.gpu, model.document, nodes));
  const std::vector<Candidate> all = candidates(model.spec, gpus);
  std::vector<Outcome> outcomes(all.size());
  const int threads = r.threads > 0 ? r.threads : tbb::info::default_concurrency();
  tbb::task_arena arena(threads);
  const size_t block = static_cast<size_t>(std::max(1, threads)) * 4;
  for (size_t start = 0; start < all.size(); start += block) {
    const size_t end = std::min(all.size(), start + block);
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<size_t>(start, end), [&](const tbb::blocked_range<size_t>& range) {
        for (size_t i = range.begin(); i != range.end(); ++i)
          outcomes[i] = evaluate(base, all[i], gpus, r.batch_tokens);
      });
    });
    if (r.progress) r.progress(static_cast<int>(end), static_cast<int>(all.size()));
  }
  int evaluated = 0, not_fitting = 0, off_batch = 0;
  std::optional<size_t> best;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    off_batch += outcomes[i].off_batch ? 1 : 0;
    if (!outcomes[i].valid) continue;
    if (!outcomes[i].fits) {
      ++not_fitting;
      continue;
    }
    ++evaluated;
    if (!best || outcomes[i].result.tokens_per_s_per_gpu > outcomes[*best].result.tokens_per_s_per_gpu)
      best = i;
  }
  json out = {{"layouts_simulated", evaluated},
              {"layouts_not_fitting", not_fitting},
              {"layouts_off_batch", off_batch},
              {"cluster_gpus", gpus},
              {"batch_tokens", r.batch_tokens}};
  if (!best) {
    out["best"] = nullptr;
    out["reason"] =
        "no layout of TP 1-8, PP, micro-batch 1-4 and interleaving with a global batch within 25% of "
        "--batch-tokens fits in GPU memory";
    return out;
  }
  const Candidate& k = all[*best];
  const Outcome& o = outcomes[*best];
  const double used = static_cast<double>(k.tp) * k.pp * o.dp;
  const double per_gpu = o.result.tokens_per_s_per_gpu;
  const hardware::GpuSpec& spec = hardware::gpu(r.gpu);
  const double needed = r.tokens / (r.days * 86400.0) / per_gpu;
  const int needed_nodes = std::max(1, static_cast<int>(std::ceil(needed / 8.0)));
  out["best"] = {{"tensor_parallel", k.tp},
                 {"pipeline_parallel", k.pp},
                 {"data_parallel", o.dp},
                 {"virtual_pipeline", k.v},
                 {"micro_batch_size", k.mb},
                 {"global_batch_size", o.global_batch},
                 {"recompute_granularity", o.recompute},
                 {"gpus_used", used},
                 {"mfu", o.result.mfu},
                 {"mfu_6nd", 6.0 * n_params * per_gpu / spec.bf16_dense_flops},
                 {"step_time_s", o.result.step_time_s},
                 {"tokens_per_s_per_gpu", per_gpu}};
  out["days"] = r.tokens / (per_gpu * used) / 86400.0;
  out["gpus_for_deadline"] = needed_nodes * 8;
  out["nodes_for_deadline"] = needed_nodes;
  out["assumptions"] = {
      "each layout is a scenario on the base case's cluster with run's defaults (stack megatron-core, bf16, "
      "ZeRO-1 distributed optimizer, analytical network); TP within a node, no context or expert parallelism",
      "days = tokens / (the best layout's simulated tokens/s per GPU x GPUs it uses); gpus_for_deadline "
      "keeps that "
      "per-GPU throughput at the size that meets --days (weak scaling; run the layout there to check)",
      "mfu_6nd = 6 N x tokens/s per GPU / peak (the cases' convention); mfu is the step model's (model FLOPs "
      "with attention)"};
  return out;
}

void check_request(const PlanRequest& r) {
  std::vector<std::string> problems;
  if (!(r.params >= 0) || !std::isfinite(r.params))
    problems.push_back("--params: got " + std::to_string(r.params) +
                       ", expected a positive parameter count, like 405e9 or 405B");
  if (r.params == 0 && r.model.is_null())
    problems.push_back(
        "--params: missing; give a parameter count (like 405B) or a model (--model PRESET or the shape "
        "flags)");
  if (!(r.tokens > 0) || !std::isfinite(r.tokens))
    problems.push_back("--tokens: expected a positive token count, like 15e12 or 15T");
  if (!(r.days > 0) || !std::isfinite(r.days))
    problems.push_back("--days: expected a positive number of days, like 30");
  if (r.seq_length < 0) problems.push_back("--seq: expected a positive sequence length");
  if (!(r.batch_tokens >= 1) || !std::isfinite(r.batch_tokens))
    problems.push_back("--batch-tokens: expected a positive token count per optimizer step, like 4M");
  if (!(r.pue == 0 || (r.pue >= 1 && r.pue <= 3)))
    problems.push_back("--pue: got " + std::to_string(r.pue) +
                       ", expected a power usage effectiveness in [1, 3], like 1.2");
  if (r.threads < 0) problems.push_back("--threads: expected a count >= 0 (0 = every core)");
  if (hardware::find_gpu(r.gpu) == nullptr) {
    std::string names;
    for (const auto& n : hardware::gpu_names()) names += " " + n;
    problems.push_back("--gpu: got '" + r.gpu + "', expected one of" + names);
  }
  if (!problems.empty()) throw ScenarioError(problems);
}

json model_json(const ChosenModel& m) {
  const workload::ModelSpec& s = m.spec;
  return {{"layers", s.layers},
          {"hidden", s.hidden},
          {"heads", s.heads},
          {"kv_heads", s.kv_heads > 0 ? s.kv_heads : s.heads},
          {"ffn_hidden", workload::ffn_hidden(s)},
          {"vocab", s.vocab},
          {"seq_length", s.seq_length},
          {"activation", s.activation},
          {"parameters", workload::total_parameters(s)},
          {"active_parameters", workload::active_parameters(s)},
          {"source", m.source}};
}

}  // namespace

json plan(const PlanRequest& r) {
  check_request(r);
  const hardware::GpuSpec& gpu = hardware::gpu(r.gpu);
  const ChosenModel model = choose_model(r);
  const auto active = static_cast<double>(workload::active_parameters(model.spec));
  const double n = r.params > 0 ? r.params : active;
  json warnings = json::array();
  if (std::fabs(active / n - 1.0) > kShapeTolerance) {
    std::ostringstream w;
    w.precision(4);
    w << "the model has " << active / 1e9 << "B (active) parameters, "
      << std::lround(100.0 * (active / n - 1.0)) << "% from --params " << n / 1e9
      << "B: the cases use --params, the layout search the model"
      << (r.model.is_null() ? "; give --model PRESET or the shape flags for the model you mean" : "");
    warnings.push_back(w.str());
  }

  const double flops = 6.0 * n * r.tokens;
  const double seconds = r.days * 86400.0;
  json out;
  out["inputs"] = {{"params", n},
                   {"tokens", r.tokens},
                   {"days", r.days},
                   {"gpu", r.gpu},
                   {"batch_tokens", r.batch_tokens},
                   {"pue", r.pue > 0 ? json(r.pue) : json(nullptr)}};
  out["training_flops"] = flops;
  out["model_state_bytes"] = 16.0 * static_cast<double>(workload::total_parameters(model.spec));
  out["power_basis"] =
      "IT power: GPU TDP + a host share of 0.5 x TDP per GPU (DGX H100: 10.2 kW for 8 x 700 W); facility "
      "power = IT "
      "x PUE, only with --pue";
  const std::array<std::pair<const char*, double>, 3> cases{
      {{"optimistic", 0.50}, {"base", 0.40}, {"conservative", 0.30}}};
  int base_nodes = 1;
  for (const auto& [name, mfu] : cases) {
    const double needed = flops / (seconds * gpu.bf16_dense_flops * mfu);
    const int nodes = std::max(1, static_cast<int>(std::ceil(needed / 8.0)));
    const double gpus = nodes * 8.0;
    if (std::string(name) == "base") base_nodes = nodes;
    json c = {{"mfu", mfu},
              {"gpus", gpus},
              {"nodes", nodes},
              {"hbm_bytes", gpus * gpu.hbm_bytes},
              {"nic_bandwidth_gbps", gpus * 400.0},  // one 400 Gb/s NIC per GPU
              {"power_w", gpus * gpu.tdp_watts * 1.5}};
    c["facility_power_w"] = r.pue > 0 ? json(gpus * gpu.tdp_watts * 1.5 * r.pue) : json(nullptr);
    out["cases"][name] = c;
  }
  out["model"] = model_json(model);
  if (base_nodes > 8192) {
    out["layout"] = {{"best", nullptr}, {"reason", "more than 65,536 GPUs: the search is not run"}};
  } else {
    out["layout"] = search_layout(model, r, base_nodes, n);
  }
  out["warnings"] = warnings;
  return out;
}

}  // namespace ct::scenario

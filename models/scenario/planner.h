// Capacity planning (`clustertwin plan`, `ct.plan`): from parameters N, tokens D and days T,
// the cluster size at three MFU assumptions, and the best layout the step model finds for the
// model that was asked for.
//
//   training FLOPs          C = 6 N D                        (Kaplan et al. 2020)
//   GPUs needed at MFU u    G = C / (T x 86400 x peak x u),  rounded up to whole nodes
//   HBM in the cluster      G x HBM per GPU;  the model state needs 16 N bytes (bf16
//                           weights and grads, fp32 master + Adam moments) before activations
//   scale-out bandwidth     G x NIC rate per GPU
//   IT power                G x (GPU TDP + host share) with the host share (CPUs, NICs,
//                           memory, fans) = 0.5 x TDP per GPU, as DGX H100 (10.2 kW for 8 x
//                           700 W) suggests; facility power = IT x PUE, only when a PUE is given
// u is 0.50 (optimistic), 0.40 (base) and 0.30 (conservative): the range large runs report.
//
// The model: a training_job.model object (a preset, any field overridden, or a full shape),
// checked by the scenario loader; without one, the dense preset or GPT-3 / Megatron table
// shape whose parameter count is nearest N. N defaults to the model's active parameters; a
// shape more than 5% away from N is a warning. The layout search builds each layout as a
// scenario on the base case's cluster (defaults as `run` has them, analytical network, folded
// replicas), over TP, PP, micro-batch and interleaving, with selective recompute or, when
// that does not fit, full recompute; it keeps the layout with the most tokens/s that fits
// in GPU memory. Its days and GPU counts come from that simulated throughput, so every
// figure of the plan rests on one number.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace ct::scenario {

struct PlanRequest {
  double params = 0;  // N; 0 = the model's active parameters (needs a model)
  double tokens = 0;  // D
  double days = 0;    // T
  std::string gpu = "H100-SXM";
  nlohmann::json model;       // training_job.model keys (a preset allowed); null = nearest shape
  int seq_length = 0;         // 0 = the model's (a preset's), or 2048 for a table shape
  double batch_tokens = 4e6;  // tokens per optimizer step in the layout search
  double pue = 0;             // facility / IT power; 0 = facility power not computed
  int threads = 0;            // layout evaluations in parallel; 0 = every core
  // Called on the calling thread after each block of layouts: (evaluated, total).
  std::function<void(int, int)> progress;
};

// Throws ScenarioError listing every problem of the request (each naming its flag or key).
nlohmann::json plan(const PlanRequest& request);

}  // namespace ct::scenario

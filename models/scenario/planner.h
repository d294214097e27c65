// Capacity planning (`clustertwin plan`): from parameters N, tokens D and days T, the
// cluster size at three MFU assumptions, and the best layout found by the step model.
//
//   training FLOPs          C = 6 N D                        (Kaplan et al. 2020)
//   GPUs needed at MFU u    G = C / (T x 86400 x peak x u),  rounded up to whole nodes
//   HBM in the cluster      G x HBM per GPU;  the model state needs 16 N bytes (bf16
//                           weights and grads, fp32 master + Adam moments) before activations
//   scale-out bandwidth     G x NIC rate per GPU
//   power                   G x (GPU TDP + host share) with the host share (CPUs, NICs,
//                           memory, fans) = 0.5 x TDP per GPU, as DGX H100 (10.2 kW for 8 x
//                           700 W) suggests; facility overhead (PUE) is left out
// u is 0.50 (optimistic), 0.40 (base) and 0.30 (conservative): the range large runs report.
// The model is a GPT shape from the GPT-3 family table (nearest parameter count); the layout
// search runs the step model (analytical network, folded replicas) over TP, PP, micro-batch
// and interleaving on the base-case cluster and keeps the fastest layout that fits in memory.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ct::scenario {

struct PlanRequest {
  double params = 0;
  double tokens = 0;
  double days = 0;
  std::string gpu = "H100-SXM";
  int seq_length = 2048;
  double batch_tokens = 4e6;  // tokens per optimizer step for the layout search
};

nlohmann::json plan(const PlanRequest& request);

}  // namespace ct::scenario

#include "models/workload/sharding.h"

#include "models/workload/memory.h"
#include "models/workload/parameters.h"

namespace ct::workload {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

// DeepSpeed defaults (docs/config-json: zero_optimization), unchanged from v0.3.13 on.
constexpr double kReduceBucketElements = 5e8;
constexpr double kMaxReuseDistanceElements = 1e9;  // stage3_max_reuse_distance

}  // namespace

Zero3Plan zero3_plan(const JobSpec& job) {
  const Stack stack = parse_stack(job.stack);
  const StackMemory st = stack_memory(stack);
  Zero3Plan plan;
  plan.reduce_bytes = st.reduce_bytes;
  const bool deepspeed = stack == Stack::deepspeed || stack == Stack::deepspeed_2021;
  if (!deepspeed) {
    plan.modules = {{1.0, {1.0}, {}}};
    if (stack == Stack::torchtitan || stack == Stack::pytorch) {  // FSDP2 (sharding.h)
      plan.gather_copy_per_byte = 2.0;
      plan.reduce_prep_bytes = 2.0 + st.reduce_bytes;
    } else if (stack == Stack::composer) {  // FSDP1 (sharding.h)
      const bool cast = st.reduce_bytes != 2.0;
      plan.reduce_prep_bytes = (cast ? 2.0 + st.reduce_bytes : 0.0) +
                               (job.parallelism.data_parallel > 1 ? 2.0 * st.reduce_bytes : 0.0);
    }
    return plan;
  }
  const ModelSpec& m = job.model;
  const double h = d(m.hidden), q = d(q_dim(m)), kv = d(kv_dim(m)),
               f = d(is_moe(m) ? expert_ffn_hidden(m) : ffn_hidden(m));
  const double mlp_in_width = is_swiglu(m) ? 2.0 * f : f;
  const double experts = is_moe(m) ? d(m.moe.experts) + d(m.moe.shared_experts) : 1.0;
  struct Linear {
    double weight, bias;
  };
  const bool bias = has_biases(m);
  const double qkv = is_mla(m) ? d(mla_qkv_weights(m)) : h * (q + 2.0 * kv);
  const Linear linears[] = {{qkv, bias ? q + 2.0 * kv : 0.0},
                            {d(attention_out_dim(m)) * h, bias ? h : 0.0},
                            {experts * h * mlp_in_width, bias ? experts * mlp_in_width : 0.0},
                            {experts * f * h, bias ? experts * h : 0.0}};
  double params = 0.0, weights = 0.0;
  for (const Linear& l : linears) {
    params += l.weight + l.bias;
    weights += l.weight;
  }
  const bool recompute = parse_recompute(job.recompute_granularity) == Recompute::full;
  double after = params;  // parameters of this module and the ones after it in the layer
  for (const Linear& l : linears) {
    ModuleFetch mf;
    mf.compute_fraction = l.weight / weights;
    if (stack == Stack::deepspeed_2021) {
      mf.gather_fractions.push_back(l.weight / params);
      if (l.bias > 0) mf.gather_fractions.push_back(l.bias / params);
    } else {
      mf.gather_fractions.push_back((l.weight + l.bias) / params);
    }
    after -= l.weight + l.bias;
    if (recompute && 2.0 * after >= kMaxReuseDistanceElements) {
      mf.recompute_gather_fractions = mf.gather_fractions;
    }
    plan.modules.push_back(mf);
  }
  if (stack == Stack::deepspeed_2021) {
    plan.prefetch = 0;
    plan.device_sync = true;
    plan.reduce_per_gather = true;
    plan.list_api = true;
  } else {
    plan.reduce_bucket_params = kReduceBucketElements;
  }
  return plan;
}

}  // namespace ct::workload

#include <gtest/gtest.h>

#include <string_view>
#include <utility>

#include "models/workload/flops.h"
#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/parameters.h"
#include "models/workload/tests/configs.h"

namespace ct::workload {
namespace {

const Op& find(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops)
    if (op.name == name) return op;
  ADD_FAILURE() << "no op " << name;
  static const Op none;
  return none;
}

// Sum of per-op FLOPs over every rank and micro-batch of one iteration.
struct IterationFlops {
  double model = 0.0;     // forward + backward
  double hardware = 0.0;  // + recompute
};
IterationFlops iteration_flops(const JobSpec& j) {
  const LayerOps layer = transformer_layer_ops(j);
  const LayerOps out = output_layer_ops(j);
  const double ranks_per_replica =
      double{1.0} * j.parallelism.tensor_parallel * j.parallelism.context_parallel;
  const double replicas_x_micro =
      static_cast<double>(j.parallelism.data_parallel) * static_cast<double>(microbatches(j));
  const double k = static_cast<double>(dense_layers(j.model)), l = j.model.layers - k;
  const LayerOps dense = transformer_layer_ops(dense_layer_job(j));  // an MoE model's leading ones
  const double per_micro = l * (layer.forward_flops() + layer.backward_flops()) +
                           k * (dense.forward_flops() + dense.backward_flops()) + out.forward_flops() +
                           out.backward_flops();
  IterationFlops f;
  f.model = per_micro * ranks_per_replica * replicas_x_micro;
  f.hardware = f.model + (l * layer.recompute_flops() + k * dense.recompute_flops()) * ranks_per_replica *
                             replicas_x_micro;
  return f;
}

TEST(LayerOps, Gpt3GemmShapesOnOneTpRank) {
  const JobSpec j = testing::gpt3_job();
  const LayerOps ops = transformer_layer_ops(j);
  const Op& qkv = find(ops.forward, "qkv");
  EXPECT_EQ(qkv.kind, OpKind::gemm);
  EXPECT_EQ(qkv.m, 2048);
  EXPECT_EQ(qkv.n, 3 * 12288 / 8);
  EXPECT_EQ(qkv.k, 12288);
  const Op& proj = find(ops.forward, "proj");
  EXPECT_EQ(proj.n, 12288);
  EXPECT_EQ(proj.k, 12288 / 8);
  EXPECT_EQ(find(ops.forward, "fc1").n, 4 * 12288 / 8);
  EXPECT_EQ(find(ops.forward, "fc2").k, 4 * 12288 / 8);
  const Op& attn = find(ops.forward, "attention");
  EXPECT_EQ(attn.kind, OpKind::attention);
  EXPECT_EQ(attn.heads, 12);
  EXPECT_EQ(attn.seq_q, 2048);
  EXPECT_EQ(attn.head_dim, 128);
  EXPECT_TRUE(attn.causal);
  // Element-wise: LayerNorm moves 4 bytes per element of the SP shard.
  EXPECT_EQ(find(ops.forward, "input_norm").bytes, 4 * 2048 * 12288 / 8);
  // Backward shapes: dgrad (M, K, N), wgrad (K, N, M).
  const Op& dgrad = find(ops.backward, "qkv.dgrad");
  EXPECT_EQ(dgrad.m, 2048);
  EXPECT_EQ(dgrad.n, 12288);
  EXPECT_EQ(dgrad.k, 3 * 12288 / 8);
  const Op& wgrad = find(ops.backward, "qkv.wgrad");
  EXPECT_EQ(wgrad.m, 12288);
  EXPECT_EQ(wgrad.n, 3 * 12288 / 8);
  EXPECT_EQ(wgrad.k, 2048);
  EXPECT_TRUE(find(ops.backward, "attention.bwd").backward);
  EXPECT_DOUBLE_EQ(ops.backward_flops(), 2.0 * ops.forward_flops());
  EXPECT_TRUE(ops.recompute.empty() == false);  // default is selective
}

// Per-op sum (fwd + bwd, no recompute) against Megatron's 72-factor closed form. The per-op
// list has no FLOPs for layernorms, biases, softmax or other element-wise ops (nor has the
// closed form); the only difference is the logits term, 6 B s h V here vs 4.5 B s h V there.
TEST(LayerOps, SumMatchesMegatron72Form) {
  JobSpec j = testing::gpt3_job();
  j.recompute_granularity = "none";
  const IterationFlops f = iteration_flops(j);
  const double f72 = megatron_flops_per_iteration(1536, 2048, 96, 12288, 51200, false);
  EXPECT_NEAR(f.model, f72, 0.01 * f72);
  EXPECT_NEAR(f.model, model_flops_per_iteration(j), 1e-9 * f.model);
  EXPECT_DOUBLE_EQ(f.hardware, f.model);
}

TEST(LayerOps, FullRecomputeSumMatchesMegatronEq3) {
  JobSpec j = testing::gpt3_job();
  j.recompute_granularity = "full";
  const LayerOps ops = transformer_layer_ops(j);
  ASSERT_EQ(ops.recompute.size(), ops.forward.size());
  const IterationFlops f = iteration_flops(j);
  const double f96 = megatron_flops_per_iteration(1536, 2048, 96, 12288, 51200, true);
  EXPECT_NEAR(f.hardware, f96, 1e-9 * f96);
  EXPECT_NEAR(f.hardware, hardware_flops_per_iteration(j), 1e-9 * f.hardware);
}

TEST(LayerOps, SelectiveRecomputesOnlyTheAttentionCore) {
  const JobSpec j = testing::gpt3_job();
  const LayerOps ops = transformer_layer_ops(j);
  ASSERT_EQ(ops.recompute.size(), 1u);
  EXPECT_EQ(ops.recompute[0].kind, OpKind::attention);
  const IterationFlops f = iteration_flops(j);
  EXPECT_NEAR(f.hardware, hardware_flops_per_iteration(j), 1e-9 * f.hardware);
}

// Megatron's recompute modules replay their own ops, each replayed GEMM with the FP8 cast of its
// input; the hardware FLOPs count them.
TEST(LayerOps, RecomputeModulesReplayTheirOps) {
  namespace rm = recompute_module;
  auto names = [](const JobSpec& j) {
    std::vector<std::string> out;
    for (const Op& op : transformer_layer_ops(j).recompute) out.emplace_back(op.name);
    return out;
  };
  JobSpec j = testing::gpt3_job();
  j.recompute_modules = rm::layernorm | rm::mlp;
  EXPECT_EQ(names(j), (std::vector<std::string>{"input_norm", "mlp_norm", "fc1", "activation", "fc2"}));
  const IterationFlops f = iteration_flops(j);
  EXPECT_NEAR(f.hardware, hardware_flops_per_iteration(j), 1e-9 * f.hardware);
  j.recompute_modules = rm::core_attn;  // Megatron's default, as no modules
  const JobSpec plain = testing::gpt3_job();
  EXPECT_EQ(transformer_layer_ops(j).recompute_flops(), transformer_layer_ops(plain).recompute_flops());
  j.precision = "fp8";
  j.recompute_modules = rm::mlp;
  EXPECT_EQ(names(j), (std::vector<std::string>{"fp8_cast", "fc1", "activation", "fp8_cast", "fc2"}));
  JobSpec moe = testing::gpt3_job();
  moe.model = testing::mixtral_8x7b();
  moe.recompute_modules = rm::moe_act | rm::layernorm;
  EXPECT_EQ(names(moe), (std::vector<std::string>{"input_norm", "mlp_norm", "expert_activation"}));
  moe.recompute_modules = rm::moe;
  const std::vector<std::string> block = names(moe);
  EXPECT_EQ(block.front(), "router");
  EXPECT_EQ(block.back(), "moe_unpermute");
  moe.recompute_modules = rm::mlp;  // no dense MLP in an MoE layer
  EXPECT_TRUE(names(moe).empty());
  moe.model.moe.shared_experts = 1;
  moe.recompute_modules = rm::shared_experts;
  EXPECT_EQ(names(moe), (std::vector<std::string>{"shared_fc1", "shared_activation", "shared_fc2"}));
}

TEST(LayerOps, GqaSwigluShapes) {
  JobSpec j;
  j.model = testing::llama2_70b();
  j.parallelism.tensor_parallel = 8;
  j.parallelism.context_parallel = 2;
  j.parallelism.data_parallel = 4;
  j.global_batch_size = 64;
  const LayerOps ops = transformer_layer_ops(j);
  EXPECT_EQ(find(ops.forward, "qkv").n, (8192 + 2 * 1024) / 8);
  EXPECT_EQ(find(ops.forward, "qkv").m, 4096 / 2);
  EXPECT_EQ(find(ops.forward, "fc1").n, 2 * 28672 / 8);  // gate + up fused
  EXPECT_EQ(find(ops.forward, "fc2").k, 28672 / 8);
  EXPECT_EQ(find(ops.forward, "activation").bytes, 6LL * 2048 * 28672 / 8);
  const Op& attn = find(ops.forward, "attention");
  EXPECT_EQ(attn.seq_q, 2048);
  EXPECT_EQ(attn.seq_kv, 4096);
  const IterationFlops f = iteration_flops(j);
  EXPECT_NEAR(f.model, model_flops_per_iteration(j), 1e-9 * f.model);
}

// DeepSeek-V3's layer: latent attention's projections (the down-projections unsplit by TP,
// the up-projections and the output projection split), attention over heads of 192 for Q.K
// and 128 for V, and its 3 leading dense layers. On one TP rank the per-op sum over the
// iteration is the model FLOPs (6 x matmul parameters + attention), exactly.
TEST(LayerOps, LatentAttentionShapesAndFlops) {
  JobSpec j;
  j.model = testing::deepseek_v3();
  j.model.seq_length = 4096;
  j.parallelism.expert_parallel = 8;
  j.parallelism.data_parallel = 8;
  j.global_batch_size = 16;
  const IterationFlops f = iteration_flops(j);
  EXPECT_NEAR(f.model, model_flops_per_iteration(j), 1e-9 * f.model);
  j.parallelism.tensor_parallel = 2;
  j.parallelism.data_parallel = 4;
  const LayerOps ops = transformer_layer_ops(j);
  EXPECT_EQ(find(ops.forward, "q_down").n, 1536);
  EXPECT_EQ(find(ops.forward, "kv_down").n, 512 + 64);
  EXPECT_EQ(find(ops.forward, "qkv").n, 128 * 192 / 2);  // Q's up-projection, then K/V's
  EXPECT_EQ(find(ops.forward, "proj").k, 128 * 128 / 2);
  const Op& attn = find(ops.forward, "attention");
  EXPECT_EQ(attn.heads, 64);
  EXPECT_EQ(attn.head_dim, (192 + 128) / 2);
  EXPECT_EQ(find(ops.forward, "rope").bytes, 4LL * 4096 * (64 * 64 + 64));
}

TEST(LayerOps, MoeExpertGemms) {
  JobSpec j;
  j.model = testing::mixtral_8x7b();
  j.parallelism.tensor_parallel = 2;
  j.parallelism.data_parallel = 8;
  j.parallelism.expert_parallel = 4;
  j.global_batch_size = 64;
  j.micro_batch_size = 2;
  j.recompute_granularity = "none";
  const LayerOps ops = transformer_layer_ops(j);
  const int64_t T = 2 * 4096;
  const Op& fc1 = find(ops.forward, "expert_fc1");
  EXPECT_EQ(fc1.count, 2);          // 8 experts / EP 4
  EXPECT_EQ(fc1.m, T * 2 * 4 / 8);  // T k EP / E
  EXPECT_EQ(fc1.n, 2 * 14336 / 2);
  EXPECT_EQ(find(ops.forward, "router").m, T / 2);  // SP-sharded tokens
  const IterationFlops f = iteration_flops(j);
  EXPECT_NEAR(f.model, model_flops_per_iteration(j), 1e-9 * f.model);

  j.model.moe.capacity_factor = 1.25;
  EXPECT_EQ(find(transformer_layer_ops(j).forward, "expert_fc1").m, T * 2 * 4 / 8 * 5 / 4);
}

TEST(LayerOps, OutputAndEmbeddingOps) {
  const JobSpec j = testing::gpt3_job();
  const LayerOps out = output_layer_ops(j);
  const Op& logits = find(out.forward, "logits");
  EXPECT_EQ(logits.m, 2048);
  EXPECT_EQ(logits.n, 51200 / 8);
  EXPECT_EQ(logits.k, 12288);
  EXPECT_TRUE(out.recompute.empty());
  const LayerOps emb = embedding_ops(j);
  ASSERT_EQ(emb.forward.size(), 1u);
  EXPECT_EQ(emb.forward[0].bytes, 2LL * 2048 * 12288);
}

// Rotary embeddings cost a kernel in every stack: fused (Transformer Engine's fused RoPE, or
// torch.compile's Triton kernel of a real-valued rotation) it reads Q and K and writes them
// rotated, 2 + 2 bytes per element, and its backward the same; eager PyTorch's complex fp32
// rotation moves 20, and so does torchtitan's compiled one (Inductor runs complex operators as
// eager fallbacks), backward 20 too. GPT's learned positions have none.
TEST(LayerOps, RotaryEmbeddingIsAKernelOfItsOwn) {
  JobSpec j = testing::gpt3_job();
  j.model = testing::llama2_70b();
  j.parallelism.tensor_parallel = 8;
  const int64_t tokens = j.micro_batch_size * j.model.seq_length;
  const int64_t qk = tokens * (8192 + 1024) / 8;
  const LayerOps fused = transformer_layer_ops(j);
  EXPECT_EQ(find(fused.forward, "rope").bytes, 4 * qk);
  EXPECT_EQ(find(fused.backward, "rope.bwd").bytes, 4 * qk);
  j.stack = "torchtitan";  // eager: the complex fp32 version
  EXPECT_EQ(find(transformer_layer_ops(j).forward, "rope").bytes, 20 * qk);
  j.torch_compile = true;
  EXPECT_EQ(find(transformer_layer_ops(j).forward, "rope").bytes, 20 * qk);
  EXPECT_EQ(find(transformer_layer_ops(j).backward, "rope.bwd").bytes, 20 * qk);
  const LayerOps gpt = transformer_layer_ops(testing::gpt3_job());
  for (const Op& op : gpt.forward) EXPECT_NE(op.name, "rope");
}

// The loss kernel's bytes per logit: Megatron's native cross entropy 10 forward and 20 backward;
// Transformer Engine's fused kernel 2 + 2 each way (in place), 6 each way with TE 2.18's fp32
// gradient.
TEST(LayerOps, TeCrossEntropyMovesFewerBytes) {
  JobSpec j = testing::gpt3_job();
  const int64_t logits = 2048LL * 51200 / 8;
  const auto bytes = [&](const JobSpec& job) {
    const LayerOps out = output_layer_ops(job);
    return std::pair{find(out.forward, "cross_entropy").bytes, find(out.backward, "cross_entropy.bwd").bytes};
  };
  EXPECT_EQ(bytes(j), std::pair(10 * logits, 20 * logits));
  j.te_cross_entropy = JobSpec::TeCrossEntropy::in_place;
  EXPECT_EQ(bytes(j), std::pair(4 * logits, 4 * logits));
  j.te_cross_entropy = JobSpec::TeCrossEntropy::fp32_grad;
  EXPECT_EQ(bytes(j), std::pair(6 * logits, 6 * logits));
  // Composer / LLM Foundry: the MPT yamls' fused_crossentropy (flash-attn's xentropy kernel)
  // reads the bf16 logits forward and reads them and writes their gradient backward.
  j.te_cross_entropy = JobSpec::TeCrossEntropy::no;
  j.stack = "composer";
  EXPECT_EQ(bytes(j), std::pair(2 * logits, 4 * logits));
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

// Stack pytorch (eager autocast over fp32 parameters): fp32 norms and residual adds, bf16 casts
// of the norm outputs and of every linear weight; the GEMMs are unchanged.
TEST(LayerOps, AutocastAddsFp32TrafficNotFlops) {
  JobSpec j = testing::gpt3_job();
  const LayerOps fused = transformer_layer_ops(j);
  j.stack = "pytorch";
  const LayerOps eager = transformer_layer_ops(j);
  EXPECT_DOUBLE_EQ(eager.forward_flops(), fused.forward_flops());
  auto bytes = [](const std::vector<Op>& ops) {
    int64_t b = 0;
    for (const Op& op : ops) b += op.kind == OpKind::elementwise ? op.bytes : 0;
    return b;
  };
  EXPECT_GT(bytes(eager.forward), bytes(fused.forward));
  int casts = 0;
  for (const Op& op : eager.forward) casts += op.name == "autocast_cast" ? 1 : 0;
  EXPECT_EQ(casts, 4);  // QKV, projection, MLP in, MLP out
  // the fused QKV output laid out for SDPA (copy) and its gradient put back (cat)
  int layout = 0;
  for (const Op& op : eager.forward) layout += op.name == "qkv_layout" ? 1 : 0;
  for (const Op& op : eager.backward) layout += op.name == "qkv_layout.bwd" ? 1 : 0;
  EXPECT_EQ(layout, 2);
  for (const Op& op : fused.forward) EXPECT_NE(op.name, "qkv_layout");
}

// fp8: every linear GEMM of the layer in FP8 with a cast-transpose before it; attention stays.
TEST(LayerOps, Fp8MarksTheLinearsAndAddsCasts) {
  JobSpec j = testing::gpt3_job();
  j.precision = "fp8";
  const LayerOps ops = transformer_layer_ops(j);
  int fp8 = 0, casts = 0;
  for (const Op& op : ops.forward) {
    fp8 += op.kind == OpKind::gemm && op.fp8 ? 1 : 0;
    casts += op.name == "fp8_cast" ? 1 : 0;
  }
  EXPECT_EQ(fp8, 4);
  EXPECT_EQ(casts, 4);
  for (const Op& op : ops.backward) {
    if (op.kind == OpKind::gemm) {
      EXPECT_TRUE(op.fp8) << op.name;
    }
  }
}

// FP8 recipes differ in their casts: current scaling reads every tensor once more for its amax
// (6 bytes per element against delayed scaling's 4); MXFP8 writes two block-scaled copies
// (4.0625) and marks its GEMMs block-scaled.
TEST(LayerOps, Fp8RecipesCostTheirCasts) {
  auto cast_bytes = [](const std::string& recipe) {
    JobSpec j = testing::gpt3_job();
    j.precision = recipe;
    int64_t b = 0;
    bool mx = false;
    for (const Op& op : transformer_layer_ops(j).forward) {
      if (op.name == "fp8_cast") b += op.bytes;
      mx = mx || op.mx;
    }
    return std::make_pair(b, mx);
  };
  const auto [delayed, mx_delayed] = cast_bytes("fp8");
  const auto [current, mx_current] = cast_bytes("fp8-cs");
  const auto [block, mx_block] = cast_bytes("mxfp8");
  EXPECT_NEAR(static_cast<double>(current) / static_cast<double>(delayed), 1.5, 1e-6);
  EXPECT_NEAR(static_cast<double>(block) / static_cast<double>(delayed), 4.0625 / 4, 1e-6);
  EXPECT_FALSE(mx_delayed);
  EXPECT_FALSE(mx_current);
  EXPECT_TRUE(mx_block);
  // NVFP4: an amax pass, then the row-wise and Hadamard-transformed column-wise copies of 0.5625
  // bytes per element each: 2 + 2 + 1.125 = 5.125 bytes against delayed scaling's 4; its GEMMs
  // are FP4 (and FP8-class for everything keyed on quantized linears), not MXFP8.
  const auto [fp4, mx_fp4] = cast_bytes("nvfp4");
  EXPECT_NEAR(static_cast<double>(fp4) / static_cast<double>(delayed), 5.125 / 4, 1e-6);
  EXPECT_FALSE(mx_fp4);
  JobSpec j = testing::gpt3_job();
  j.precision = "nvfp4";
  int fp4_gemms = 0;
  for (const Op& op : transformer_layer_ops(j).backward) {
    if (op.kind == OpKind::gemm) {
      EXPECT_TRUE(op.fp8 && op.fp4) << op.name;
      ++fp4_gemms;
    }
  }
  EXPECT_EQ(fp4_gemms, 8);  // dgrad and wgrad of QKV, projection, MLP in and out
}

}  // namespace
}  // namespace ct::workload

namespace ct::workload {
namespace {

// Eager PyTorch Llama blocks (torchtitan without torch.compile): composite fp32 RMSNorm (36
// bytes per element against 4), complex-fp32 rotary embeddings on Q and K (20 bytes per
// element; torchtitan's compiled blocks too, Inductor leaving complex operators to eager
// kernels), SwiGLU as silu + mul (10 against 6); compiled, or on Megatron's stack, fused.
TEST(LayerOps, EagerLlamaOpsCostTheirCompositeKernels) {
  JobSpec j = testing::gpt3_job();
  j.model.activation = "swiglu";
  j.stack = "torchtitan";
  auto find = [](const LayerOps& ops, std::string_view name) {
    for (const Op& op : ops.forward) {
      if (op.name == name) return op.bytes;
    }
    return int64_t{-1};
  };
  const LayerOps eager = transformer_layer_ops(j);
  j.torch_compile = true;
  const LayerOps compiled = transformer_layer_ops(j);
  EXPECT_EQ(find(eager, "input_norm"), 9 * find(compiled, "input_norm"));
  EXPECT_EQ(find(eager, "rope"), find(compiled, "rope"));  // complex fp32 either way
  EXPECT_EQ(3 * find(eager, "activation"), 5 * find(compiled, "activation"));
  EXPECT_TRUE(eager_llama([&] {
    JobSpec e = j;
    e.torch_compile = false;
    return e;
  }()));
  j.torch_compile = false;
  // PyTorch >= 2.8 (the pytorch stack): nn.RMSNorm is one fused kernel; rotary stays composite.
  j.stack = "pytorch";
  const LayerOps plain = transformer_layer_ops(j);
  EXPECT_TRUE(eager_llama(j));
  EXPECT_EQ(find(plain, "input_norm"), 2 * find(compiled, "input_norm"));  // fp32 under autocast
  EXPECT_EQ(find(plain, "rope"), find(eager, "rope"));
  j.stack = "megatron-core";
  EXPECT_FALSE(eager_llama(j));
}

// torchtitan's attention copies K and V to every query head before SDPA (repeat_kv): read once,
// written heads / kv_heads times, and summed back in backward; not on Megatron's stack, nor
// without grouped-query attention.
TEST(LayerOps, TorchtitanRepeatsKeysAndValuesForGroupedQueryAttention) {
  JobSpec j = testing::gpt3_job();
  j.model = testing::llama2_70b();  // 64 heads, 8 KV heads of 128
  j.parallelism.tensor_parallel = 8;
  const int64_t tokens = j.micro_batch_size * j.model.seq_length;
  const int64_t kv = tokens * 1024 / 8, expanded = tokens * 8192 / 8;
  auto bytes = [](const std::vector<Op>& ops, std::string_view name) {
    for (const Op& op : ops) {
      if (op.name == name) return op.bytes;
    }
    return int64_t{-1};
  };
  EXPECT_EQ(bytes(transformer_layer_ops(j).forward, "repeat_kv"), -1);
  j.stack = "torchtitan";
  for (const bool compiled : {false, true}) {
    j.torch_compile = compiled;
    const LayerOps ops = transformer_layer_ops(j);
    EXPECT_EQ(bytes(ops.forward, "repeat_kv"), 2 * (2 * kv + 2 * expanded));
    EXPECT_EQ(bytes(ops.backward, "repeat_kv.bwd"), 2 * (2 * kv + 2 * expanded));
  }
  j.model.kv_heads = j.model.heads;  // multi-head attention: nothing to repeat
  EXPECT_EQ(bytes(transformer_layer_ops(j).forward, "repeat_kv"), -1);
}

// model.position_embedding: rotary costs its kernel whatever the MLP (a GPT-NeoX-style gelu
// model with rope gets it, a swiglu model with none or learned positions does not), eager or
// fused; learned positions add seq_length x hidden parameters, rope and none add none.
TEST(LayerOps, PositionEmbeddingDecidesTheRotaryKernelAndTheTable) {
  JobSpec j = testing::gpt3_job();
  j.stack = "pytorch";
  auto has_rope = [](const JobSpec& job) {
    for (const Op& op : transformer_layer_ops(job).forward) {
      if (op.name == "rope") return true;
    }
    return false;
  };
  EXPECT_FALSE(has_rope(j));  // gelu, auto: learned
  j.model.position_embedding = "rope";
  EXPECT_TRUE(has_rope(j));
  const int64_t rope_params = total_parameters(j.model);
  j.model.position_embedding = "learned";
  EXPECT_EQ(total_parameters(j.model) - rope_params, j.model.seq_length * j.model.hidden);
  j.model.position_embedding = "none";
  EXPECT_EQ(total_parameters(j.model), rope_params);
  j.model.activation = "swiglu";
  EXPECT_FALSE(has_rope(j));
  j.model.position_embedding = "auto";
  EXPECT_TRUE(has_rope(j));
  j.stack = "megatron-core";
  EXPECT_TRUE(has_rope(j));
  j.model.position_embedding = "none";
  EXPECT_FALSE(has_rope(j));
}

}  // namespace
}  // namespace ct::workload

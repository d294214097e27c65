#include "models/workload/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::workload {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

double sum_flops(const std::vector<Op>& ops) {
  double f = 0.0;
  for (const Op& op : ops) f += op.flops();
  return f;
}

Op elementwise(std::string_view name, int64_t bytes) {
  Op op;
  op.name = name;
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  return op;
}

// A forward op and the names of its backward op(s).
struct Step {
  Op op;
  std::string_view bwd_a;  // dgrad, attention backward, or element-wise backward
  std::string_view bwd_b;  // wgrad (GEMMs only)
  int64_t bwd_bytes = -1;  // element-wise backward bytes; -1 = 2x the forward's
};

// Backward list: forward steps in reverse, GEMMs as dgrad + wgrad, element-wise at 2x bytes.
std::vector<Op> backward_of(const std::vector<Step>& steps) {
  std::vector<Op> out;
  out.reserve(2 * steps.size());
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Op& f = it->op;
    switch (f.kind) {
      case OpKind::gemm:
        out.push_back(gemm_dgrad(f, it->bwd_a));
        out.push_back(gemm_wgrad(f, it->bwd_b));
        break;
      case OpKind::attention: {
        Op b = f;
        b.name = it->bwd_a;
        b.backward = true;
        out.push_back(b);
        break;
      }
      case OpKind::elementwise:
        out.push_back(elementwise(it->bwd_a, it->bwd_bytes >= 0 ? it->bwd_bytes : 2 * f.bytes));
        break;
    }
  }
  return out;
}

// Whether Megatron's selective recompute of `modules` (recompute_module bits) replays a forward
// op of a layer of model m, by the op names built here: core_attn the attention core, layernorm
// the two pre-norms, moe_act the experts' activation, mla_up_proj the latent up-projections
// ("qkv" of an MLA layer) and their rotary part, mlp a dense MLP, shared_experts the shared
// expert, moe the whole MoE block (router, permutations, experts, shared expert).
bool replayed(const Op& op, uint32_t modules, const ModelSpec& m) {
  namespace rm = recompute_module;
  const std::string_view n = op.name;
  const bool shared = n == "shared_fc1" || n == "shared_activation" || n == "shared_fc2";
  return ((modules & rm::core_attn) && (op.kind == OpKind::attention || n.starts_with("attn_core."))) ||
         ((modules & rm::layernorm) && (n == "input_norm" || n == "mlp_norm")) ||
         ((modules & rm::moe_act) && n == "expert_activation") ||
         ((modules & rm::mla_up_proj) && is_mla(m) && (n == "qkv" || n == "rope")) ||
         ((modules & rm::mlp) && !is_moe(m) && (n == "fc1" || n == "activation" || n == "fc2")) ||
         ((modules & (rm::shared_experts | rm::moe)) && shared) ||
         ((modules & rm::moe) && is_moe(m) &&
          (n == "router" || n == "moe_permute" || n.starts_with("expert_") || n == "moe_unpermute"));
}

// A layer's forward, backward and what `recompute` replays before backward. Selective on a
// stack with op-level checkpointing: torchtitan's policy (parallelize_llama.py, Dec 2024): the
// outputs of every other matmul and of the attention kernel are saved, everything else is
// recomputed (the element-wise ops and the other matmuls). Otherwise selective replays the
// job's Megatron recompute modules (selective_modules, replayed()), each replayed GEMM with the
// FP8 cast of its input before it.
LayerOps assemble(const std::vector<Step>& steps, Recompute recompute, const JobSpec& job) {
  LayerOps ops;
  for (const Step& s : steps) ops.forward.push_back(s.op);
  ops.backward = backward_of(steps);
  if (recompute == Recompute::full) {
    ops.recompute = ops.forward;
  } else if (recompute == Recompute::selective && stack_memory(job).op_level_selective) {
    int matmuls = 0;
    for (const Op& op : ops.forward) {
      if (op.kind == OpKind::attention || op.name.starts_with("attn_core.")) continue;
      if (op.kind == OpKind::gemm && matmuls++ % 2 == 0) continue;  // saved
      ops.recompute.push_back(op);
    }
  } else if (recompute == Recompute::selective) {
    const uint32_t modules = selective_modules(job);
    for (size_t i = 0; i < ops.forward.size(); ++i) {
      const Op& op = ops.forward[i];
      const bool cast_of_next = op.name == "fp8_cast" && i + 1 < ops.forward.size() &&
                                replayed(ops.forward[i + 1], modules, job.model);
      if (cast_of_next || replayed(op, modules, job.model)) ops.recompute.push_back(op);
    }
  }
  return ops;
}

struct Dims {
  int64_t b, s, t, c, T, h, X;
};

Dims dims(const JobSpec& job) {
  Dims x{};
  x.b = job.micro_batch_size;
  x.s = job.model.seq_length;
  x.t = job.parallelism.tensor_parallel;
  x.c = job.parallelism.context_parallel;
  x.T = x.b * x.s / x.c;
  x.h = job.model.hidden;
  x.X = job.parallelism.sequence_parallel ? x.T * x.h / x.t : x.T * x.h;
  return x;
}

}  // namespace

double Op::flops() const {
  switch (kind) {
    case OpKind::gemm:
      return 2.0 * d(m) * d(n) * d(k) * d(count);
    case OpKind::attention:
      return (backward ? 8.0 : 4.0) * d(batch) * d(heads) * d(seq_q) *
             d(window > 0 ? std::min(window, seq_kv) : seq_kv) * d(head_dim);
    case OpKind::elementwise:
      return 0.0;
  }
  return 0.0;
}

double LayerOps::forward_flops() const { return sum_flops(forward); }
double LayerOps::backward_flops() const { return sum_flops(backward); }
double LayerOps::recompute_flops() const { return sum_flops(recompute); }

Op gemm(std::string_view name, int64_t m, int64_t n, int64_t k, int64_t count) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.count = count;
  return op;
}

Op gemm_dgrad(const Op& f, std::string_view name) {
  Op op = gemm(name, f.m, f.k, f.n, f.count);
  op.fp8 = f.fp8;
  op.mx = f.mx;
  op.fp4 = f.fp4;
  return op;
}
Op gemm_wgrad(const Op& f, std::string_view name) {
  Op op = gemm(name, f.k, f.n, f.m, f.count);
  op.fp8 = f.fp8;
  op.mx = f.mx;
  op.fp4 = f.fp4;
  return op;
}

namespace {

// FP8 (Transformer Engine): every linear layer of the transformer runs its forward, dgrad and
// wgrad GEMMs in FP8; before each, a fused cast-transpose turns the bf16 input into FP8 and
// its FP8 transpose (read 2 + write 1 + 1 bytes per element, te cast_transpose), the input
// activation in forward and the output gradient in backward; weights are cast the same way
// on the first micro-batch of a step and cached (TE is_first_microbatch). The attention core,
// norms, the embedding and the output layer stay in bf16 (Megatron-core's FP8 recipe).
// Recipes (bytes moved per element of a cast tensor):
//   fp8 (delayed scaling): the scale comes from the amax history: 4 (read 2, write 1 + 1).
//   fp8-cs (per-tensor current scaling): an amax pass reads the tensor first: 6.
//   mxfp8 (1 x 32 blocks, E8M0 scales, Blackwell): quantized row-wise and column-wise from
//     bf16 in one pass, each copy with one scale byte per 32 elements: 2 + 2 x 33/32 = 4.0625;
//     the GEMMs are block-scaled (ComputeModel: kMxfp8KernelRatio).
//   nvfp4 (TE NVFP4BlockScaling: E2M1 in 1 x 16 blocks with E4M3 scales under a per-tensor FP32
//     scale, Blackwell): an amax pass first (nvte_hadamard_transform_amax reads the input once
//     for the amax of x and of its Hadamard transform; weights, without RHT,
//     nvte_compute_amax), then one fused kernel writes the row-wise copy and the column-wise
//     one of the 16 x 16 random-Hadamard-transformed input for the wgrad GEMM
//     (nvte_quantize_with_hadamard_transform; weights: 2-D 16 x 16 scaling, nvte_quantize_v2),
//     each 0.5 + 1/16 bytes per element: 2 + 2 + 2 x 0.5625 = 5.125 (TransformerEngine
//     pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl @ d0067d0). Stochastic rounding
//     of gradients and the 16-point transform are arithmetic inside those memory-bound passes.
void to_fp8(std::vector<Step>& steps, int64_t microbatches, const std::string& recipe) {
  const int64_t per32 = recipe == "mxfp8"    ? 130
                        : recipe == "nvfp4"  ? 164
                        : recipe == "fp8-cs" ? 192
                                             : 128;  // bytes per element x 32
  auto cast = [&](int64_t elements) { return elements * per32 / 32; };
  std::vector<Step> out;
  for (Step s : steps) {
    const bool linear = s.op.kind == OpKind::gemm && !s.op.name.starts_with("attn_core.");
    if (!linear) {
      out.push_back(s);
      continue;
    }
    s.op.fp8 = true;
    s.op.mx = recipe == "mxfp8";
    s.op.fp4 = recipe == "nvfp4";
    const int64_t input = s.op.m * s.op.k * s.op.count, weight = s.op.k * s.op.n * s.op.count;
    const int64_t grad = s.op.m * s.op.n * s.op.count;
    out.push_back({elementwise("fp8_cast", cast(input) + cast(weight) / std::max<int64_t>(1, microbatches)),
                   "fp8_cast.bwd",
                   {},
                   cast(grad)});
    out.push_back(s);
  }
  steps = std::move(out);
}

// Eager PyTorch under torch.autocast(bf16) over fp32 parameters (stack pytorch): the residual
// stream and the norms run in fp32 (autocast's fp32 list), so norms move 8 bytes per element
// instead of 4 and residual adds 10 (fp32 + bf16 -> fp32) instead of 6; the fp32 norm outputs
// are cast to bf16 before the QKV and MLP-in GEMMs (6 bytes per element, and back in
// backward), and every linear weight is cast fp32 -> bf16 in each forward (autocast's cache
// lives one forward) and its bf16 gradient accumulated into the fp32 .grad in backward (6 bytes
// per parameter each way). Read from the PyTorch execution trace of the H200 step
// (tests/data/traces/kineto: aten::layer_norm on Tensor(float), aten::linear casting,
// aten::add(float, bf16) -> float). The fused QKV projection's output is laid out for
// scaled_dot_product_attention by a copy, and its gradient put back by a cat (below).
void to_autocast(std::vector<Step>& steps, int64_t X) {
  std::vector<Step> out;
  for (Step s : steps) {
    const std::string_view n = s.op.name;
    if (s.op.kind == OpKind::elementwise && (n == "input_norm" || n == "mlp_norm")) {
      s.op.bytes *= 2;
      s.bwd_bytes = 2 * s.op.bytes;
    } else if (s.op.kind == OpKind::elementwise && (n == "attn_residual" || n == "mlp_residual")) {
      s.op.bytes = s.op.bytes / 6 * 10;
    }
    if (s.op.kind == OpKind::gemm && !n.starts_with("attn_core.")) {
      const int64_t weight = s.op.k * s.op.n * s.op.count;
      const bool fp32_input = n == "qkv" || n == "fc1" || n == "shared_fc1";
      const int64_t cast = 6 * weight + (fp32_input ? 6 * X : 0);
      out.push_back({elementwise("autocast_cast", cast), "autocast_cast.bwd", {}, cast});
    }
    out.push_back(s);
    if (n == "qkv") {
      // The fused QKV output [b, s, 3, a, d] is permuted to [3, b, a, s, d] and made contiguous
      // for the SDPA kernel (aten::copy_, read + write in bf16), and in backward the q, k, v
      // gradients are concatenated back (aten::cat): 2 x 2 bytes per element of the QKV
      // output each way. In the H200 trace: 335 us forward and 422 us backward per layer for
      // 8 x 2048 x 6144 elements (tests/validation/h200-gpt1.4b-step.json's run).
      const int64_t qkv_out = 4 * s.op.m * s.op.n * s.op.count;
      out.push_back({elementwise("qkv_layout", qkv_out), "qkv_layout.bwd", {}, qkv_out});
    }
  }
  steps = std::move(out);
}

// Eager PyTorch Llama blocks (stacks torchtitan, pytorch and composer without torch.compile;
// torchtitan's model code, Dec 2024): RMSNorm is composite in fp32 (x.float(), pow, mean,
// x * rsqrt, type_as, * weight: 2+4, 4+4, 4, 4+4, 4+2, 2+2 = 36 bytes per element instead of a
// fused kernel's 4) on torchtitan (its own RMSNorm module then) and composer (Hugging Face's
// LlamaRMSNorm is the same composite). The pytorch stack is PyTorch 2.11, the calibration's:
// since 2.8 nn.RMSNorm / F.rms_norm on CUDA dispatch to one fused kernel
// (aten::_fused_rms_norm, pytorch/pytorch#153666), so its norms keep the fused bytes (read x,
// write y; under autocast both fp32). Measured on the H200: a Llama-3.2-3B-shaped model at 8K
// tokens steps in 0.449 s (tests/validation/h200-pytorch-steps.json); with the composite
// norm's 72 bytes per element the twin said 0.547 s. Rotary embeddings go through complex
// fp32 (float, complex multiply, type_as: 2+4, 4+4, 4+2 = 20 bytes per element of Q and K,
// which fused kernels fold into the attention or QKV epilogue); SwiGLU is silu then mul (2+2,
// 2+2+2 = 10 bytes per element of the MLP width instead of 6). Backward moves twice the forward
// bytes, as every element-wise op here. GPT blocks (LayerNorm, GELU) are single kernels in
// eager PyTorch: unchanged. torch.compile fuses these back (training_job.runtime.torch_compile).
void to_eager_llama(std::vector<Step>& steps, bool composite_norm) {
  std::vector<Step> out;
  for (Step s : steps) {
    const std::string_view n = s.op.name;
    if (composite_norm && s.op.kind == OpKind::elementwise && (n == "input_norm" || n == "mlp_norm")) {
      s.op.bytes = s.op.bytes / 4 * 36;
      s.bwd_bytes = 2 * s.op.bytes;
    } else if (s.op.kind == OpKind::elementwise &&
               (n == "activation" || n == "shared_activation" || n == "expert_activation")) {
      s.op.bytes = s.op.bytes / 6 * 10;
    }
    out.push_back(s);
  }
  steps = std::move(out);
}

// Rotary embeddings in eager PyTorch (model.position_embedding rope, or auto with swiglu):
// the complex fp32 rotation of Q and K after the QKV projection (20 bytes per element, above).
void add_eager_rope(std::vector<Step>& steps, int64_t qk_elements) {
  std::vector<Step> out;
  for (const Step& s : steps) {
    out.push_back(s);
    if (s.op.name == "qkv") out.push_back({elementwise("rope", 20 * qk_elements), "rope.bwd", {}});
  }
  steps = std::move(out);
}

}  // namespace

bool eager_pytorch(const JobSpec& job) {
  const Stack st = parse_stack(job.stack);
  return !job.torch_compile && (st == Stack::torchtitan || st == Stack::pytorch || st == Stack::composer);
}

bool eager_llama(const JobSpec& job) { return is_swiglu(job.model) && eager_pytorch(job); }

double attention_kv_copies(const JobSpec& job) {
  const ModelSpec& m = job.model;
  if (parse_stack(job.stack) != Stack::torchtitan || is_mla(m)) return 1.0;
  return static_cast<double>(m.heads) / static_cast<double>(kv_heads(m));
}

// Multi-head latent attention's projections (MlaSpec; Megatron-core MLASelfAttention): the
// down-projections of Q (when q_lora_rank > 0) and of K/V (latent + shared rotary key) run
// unsplit on the layer's T tokens (built duplicated over TP), each latent through its RMSNorm,
// then the column-parallel up-projections, which the TP overlap models see as the layer's QKV.
namespace {
void add_mla_projections(std::vector<Step>& st, const ModelSpec& m, int64_t T, int64_t t) {
  const MlaSpec& a = m.mla;
  const int64_t h = m.hidden, H = m.heads, qk = mla_qk_head_dim(m);
  if (a.q_lora_rank > 0) {
    st.push_back({gemm("q_down", T, a.q_lora_rank, h), "q_down.dgrad", "q_down.wgrad"});
    st.push_back({elementwise("q_norm", 4 * T * a.q_lora_rank), "q_norm.bwd", {}});
    st.push_back({gemm("qkv", T, H * qk / t, a.q_lora_rank), "qkv.dgrad", "qkv.wgrad"});
  } else {
    st.push_back({gemm("qkv", T, H * qk / t, h), "qkv.dgrad", "qkv.wgrad"});
  }
  st.push_back(
      {gemm("kv_down", T, a.kv_lora_rank + a.qk_rope_head_dim, h), "kv_down.dgrad", "kv_down.wgrad"});
  st.push_back({elementwise("kv_norm", 4 * T * a.kv_lora_rank), "kv_norm.bwd", {}});
  st.push_back({gemm("qkv", T, H * (a.qk_nope_head_dim + a.v_head_dim) / t, a.kv_lora_rank), "qkv.dgrad",
                "qkv.wgrad"});
}

// The rotary embedding of Q and K on stacks that do not run it eagerly (add_eager_rope does
// that), and torchtitan's copies of K and V to every query head: qk elements of Q and K, kv
// of K (or V), expanded those of K (or V) after the copy.
void add_rope_and_repeat_kv(std::vector<Step>& st, const JobSpec& job, int64_t qk, int64_t kv,
                            int64_t expanded) {
  const ModelSpec& m = job.model;
  if (rotary_positions(m) && !eager_pytorch(job)) {
    if (parse_stack(job.stack) == Stack::torchtitan) {
      // torchtitan's compiled blocks: its apply_rotary_emb turns Q and K through complex fp32
      // (view_as_complex(x.float()) * freqs_cis, view_as_real, type_as; torchtitan's Llama
      // model code from 2024 to 2026, models/common/rope.py), and Inductor does not generate
      // code for complex operators: the complex multiply runs as an eager fallback kernel
      // (torch/_inductor/lowering.py unsupported_input_tensor, "Torchinductor does not
      // support code generation for complex operators"). Its inputs and outputs stay in HBM:
      // the cast to fp32 (2 + 4 bytes per element), the multiply (4 + 4) and the cast back
      // (4 + 2): 20 bytes per element of Q and K, as eager; the backward the same three
      // kernels on the gradients (conj(freqs_cis) for the multiply): 20 again.
      st.push_back({elementwise("rope", 20 * qk), "rope.bwd", {}, 20 * qk});
    } else {
      // Fused rotary embedding: one kernel reads Q and K and writes them rotated (2 + 2 bytes
      // per element), its backward the same for their gradients: Transformer Engine's
      // fused_rope_forward / _backward, applied to Q and K out of place (Megatron-core
      // apply_rotary_pos_emb with apply_rope_fusion), and the Triton kernel torch.compile
      // makes of a real-valued rotation (rotate_half, Hugging Face's models). Eager PyTorch's
      // complex fp32 version is add_eager_rope.
      st.push_back({elementwise("rope", 4 * qk), "rope.bwd", {}, 4 * qk});
    }
  }
  if (attention_kv_copies(job) > 1.0) {
    // torchtitan's Attention.forward repeats K and V to every query head before SDPA
    // (repeat_kv: unsqueeze, expand, reshape of the expanded view, which copies; Llama model
    // code of Dec 2024 and June 2025): K and V read once and written heads / kv_heads times
    // (2 + 2 x n_rep bytes per element of each); the backward sums the copies back (the same
    // bytes the other way).
    const int64_t bytes = 2 * (2 * kv + 2 * expanded);
    st.push_back({elementwise("repeat_kv", bytes), "repeat_kv.bwd", {}, bytes});
  }
}
}  // namespace

LayerOps transformer_layer_ops(const JobSpec& job) {
  const ModelSpec& m = job.model;
  const Dims x = dims(job);
  const int64_t t = x.t, T = x.T, h = x.h, X = x.X;
  const int64_t g = is_swiglu(m) ? 2 : 1;
  const int64_t act_bytes_per_elem = is_swiglu(m) ? 6 : 4;
  const int64_t residual_bytes = 6 * X + (has_dropout(m) ? X : 0);

  std::vector<Step> st;
  st.push_back({elementwise("input_norm", 4 * X), "input_norm.bwd", {}});
  const int64_t q = q_dim(m);
  // Elements of Q and K the rotary embedding turns: MLA rotates only its rope part, the key's
  // shared by every head (not split by TP).
  const int64_t qk = is_mla(m) ? T * (m.heads * m.mla.qk_rope_head_dim / t + m.mla.qk_rope_head_dim)
                               : T * (q + kv_dim(m)) / t;
  if (is_mla(m)) {
    add_mla_projections(st, m, T, t);
  } else {
    st.push_back({gemm("qkv", T, (q + 2 * kv_dim(m)) / t, h), "qkv.dgrad", "qkv.wgrad"});
  }
  add_rope_and_repeat_kv(st, job, qk, T * kv_dim(m) / t, T * q / t);
  if (job.attention == "unfused") {
    // Materialised attention (Megatron before FlashAttention): two batched GEMMs over the
    // full s x s scores (no causal skip), fused scale-mask-softmax and dropout on the
    // probabilities in HBM: softmax reads and writes them (4 B/element), dropout reads,
    // writes and stores a 1-byte mask (5 B/element). Backward: softmax reads probabilities
    // and gradient and writes the gradient (6 B), dropout reads gradient and mask and writes
    // (5 B).
    // Q.K over the qk head width, the context over the v width (both head_dim without MLA)
    const int64_t heads = m.heads / t, sq = x.s / x.c, skv = x.s;
    const int64_t dqk = is_mla(m) ? mla_qk_head_dim(m) : head_dim(m), dv = is_mla(m) ? m.mla.v_head_dim : dqk;
    const int64_t probs = x.b * heads * sq * skv;
    st.push_back({gemm("attn_core.scores", sq, skv, dqk, x.b * heads), "attn_core.scores.dgrad",
                  "attn_core.scores.wgrad"});
    st.push_back({elementwise("attn_core.softmax", 4 * probs), "attn_core.softmax.bwd", {}, 6 * probs});
    if (has_dropout(m)) {
      st.push_back({elementwise("attn_core.dropout", 5 * probs), "attn_core.dropout.bwd", {}, 5 * probs});
    }
    st.push_back({gemm("attn_core.context", sq, dv, skv, x.b * heads), "attn_core.context.dgrad",
                  "attn_core.context.wgrad"});
  } else {
    Op attn;
    attn.name = "attention";
    attn.kind = OpKind::attention;
    attn.batch = x.b;
    attn.heads = m.heads / t;
    attn.seq_q = x.s / x.c;
    attn.seq_kv = x.s;
    attn.head_dim = attention_head_width(m);
    attn.window = m.sliding_window;  // 0 unless the layer's model has one (windowed_layer_job)
    attn.causal = true;
    st.push_back({attn, "attention.bwd", {}});
  }
  st.push_back({gemm("proj", T, h, attention_out_dim(m) / t), "proj.dgrad", "proj.wgrad"});
  st.push_back({elementwise("attn_residual", residual_bytes), "attn_residual.bwd", {}});
  st.push_back({elementwise("mlp_norm", 4 * X), "mlp_norm.bwd", {}});

  if (!is_moe(m)) {
    const int64_t f = ffn_hidden(m) / t;
    st.push_back({gemm("fc1", T, g * f, h), "fc1.dgrad", "fc1.wgrad"});
    st.push_back({elementwise("activation", act_bytes_per_elem * T * f), "activation.bwd", {}});
    st.push_back({gemm("fc2", T, h, f), "fc2.dgrad", "fc2.wgrad"});
  } else {
    const MoeSpec& e = m.moe;
    // Routed experts run at the expert tensor parallelism et (= t unless folded): their widths
    // split et ways over the tokens of et sequence-parallel ranks, T et / t (T with et = t).
    const int64_t et = expert_tp(job.parallelism);
    const int64_t fe = expert_ffn_hidden(m) / et;
    const int64_t moe_tokens = job.parallelism.sequence_parallel ? T * et / t : T;
    const int64_t ep = job.parallelism.expert_parallel;
    const int64_t local_experts = e.experts / ep;
    const int64_t router_tokens = job.parallelism.sequence_parallel ? T / t : T;
    const auto per_expert = static_cast<int64_t>(
        std::ceil(e.capacity_factor * d(moe_tokens) * d(e.top_k) * d(ep) / d(e.experts)));
    st.push_back({gemm("router", router_tokens, e.experts, h), "router.dgrad", "router.wgrad"});
    if (e.shared_experts > 0) {
      const int64_t fs = e.shared_experts * expert_ffn_hidden(m) / t;  // shared experts: dense TP
      st.push_back({gemm("shared_fc1", T, g * fs, h), "shared_fc1.dgrad", "shared_fc1.wgrad"});
      st.push_back(
          {elementwise("shared_activation", act_bytes_per_elem * T * fs), "shared_activation.bwd", {}});
      st.push_back({gemm("shared_fc2", T, h, fs), "shared_fc2.dgrad", "shared_fc2.wgrad"});
    }
    st.push_back({elementwise("moe_permute", 4 * moe_tokens * e.top_k * h), "moe_permute.bwd", {}});
    st.push_back(
        {gemm("expert_fc1", per_expert, g * fe, h, local_experts), "expert_fc1.dgrad", "expert_fc1.wgrad"});
    st.push_back({elementwise("expert_activation", act_bytes_per_elem * per_expert * local_experts * fe),
                  "expert_activation.bwd",
                  {}});
    st.push_back(
        {gemm("expert_fc2", per_expert, h, fe, local_experts), "expert_fc2.dgrad", "expert_fc2.wgrad"});
    st.push_back({elementwise("moe_unpermute", 4 * moe_tokens * e.top_k * h), "moe_unpermute.bwd", {}});
  }
  st.push_back({elementwise("mlp_residual", residual_bytes), "mlp_residual.bwd", {}});
  if (is_fp8(job)) to_fp8(st, microbatches(job), job.precision);
  if (stack_memory(job).residual_bytes > 2) to_autocast(st, X);
  if (eager_llama(job)) to_eager_llama(st, parse_stack(job.stack) != Stack::pytorch);
  if (eager_pytorch(job) && rotary_positions(m)) add_eager_rope(st, qk);
  return assemble(st, parse_recompute(job.recompute_granularity), job);
}

LayerOps output_layer_ops(const JobSpec& job) {
  const Dims x = dims(job);
  const int64_t v = (job.model.vocab + x.t - 1) / x.t;  // vocab-parallel logits (padded)
  std::vector<Step> st;
  st.push_back({elementwise("final_norm", 4 * x.X), "final_norm.bwd", {}});
  st.push_back({gemm("logits", x.T, v, x.h), "logits.dgrad", "logits.wgrad"});
  // Eager cross entropy: about 10 bytes per logit each way (fp32 copy, log-softmax, NLL). A
  // compiled one reads the bf16 logits once forward and reads them and writes their gradient
  // backward: 2 + 4 bytes, 3 per pass on average (the backward step repeats the forward's bytes).
  // Transformer Engine's fused kernel reads the bf16 logits and writes their gradient in one
  // forward pass, and the backward scales that gradient: 2 + 2 bytes each way (TE 2.2-2.17, in
  // place in bf16), 2 + 4 forward and 4 + 2 backward with TE 2.18's fp32 gradient.
  // The composer stack's loss is the MPT yamls' default loss_fn, fused_crossentropy
  // (llmfoundry/models/mpt/modeling_mpt.py; flash-attn's xentropy CUDA kernel, installed by
  // llm-foundry's [gpu] extra): forward reads the bf16 logits once (2 bytes) and keeps the
  // log-sum-exp per row; backward reads them and writes their gradient (2 + 2), as
  // memory.cpp's 4 bytes per logit for that stack.
  using Te = JobSpec::TeCrossEntropy;
  const int64_t logits = x.T * v;
  const int64_t forward = job.te_cross_entropy == Te::in_place        ? 4
                          : job.te_cross_entropy == Te::fp32_grad     ? 6
                          : job.compiled_loss                         ? 3
                          : parse_stack(job.stack) == Stack::composer ? 2
                                                                      : 10;
  const bool te = job.te_cross_entropy != Te::no;  // backward bytes as forward; else 2x (Step)
  st.push_back(
      {elementwise("cross_entropy", forward * logits), "cross_entropy.bwd", {}, te ? forward * logits : -1});
  return assemble(st, Recompute::none, job);
}

LayerOps embedding_ops(const JobSpec& job) {
  const Dims x = dims(job);
  std::vector<Step> st;
  st.push_back({elementwise("embedding", 2 * x.T * x.h), "embedding.bwd", {}});
  return assemble(st, Recompute::none, job);
}

namespace {

// Plateau speed at head dim d relative to head dim 128, from the ratios at 64 and 256
// (layer_ops.h): piecewise linear in log2(d), flat outside [64, 256].
double head_dim_ratio(int64_t head_dim, double at64, double at256) {
  const double x = std::log2(static_cast<double>(std::max<int64_t>(1, head_dim)) / 128.0);
  if (x <= 0.0) return 1.0 + (1.0 - at64) * std::max(x, -1.0);
  return 1.0 + (at256 - 1.0) * std::min(x, 1.0);
}

// The kernel family's ratio to head dim 128 at this head dim (layer_ops.h's bars).
double head_dim_factor(HeadDimCurve curve, int64_t head_dim, bool backward) {
  switch (curve) {
    case HeadDimCurve::fa3:
      return backward ? head_dim_ratio(head_dim, 0.845, 1.0) : head_dim_ratio(head_dim, 0.766, 1.042);
    case HeadDimCurve::fa2:
      return backward ? head_dim_ratio(head_dim, 0.903, 1.0) : head_dim_ratio(head_dim, 0.889, 0.891);
    case HeadDimCurve::none:
      break;
  }
  return 1.0;
}

}  // namespace

double AttentionKernelSpeed::forward_at(int64_t head_dim) const {
  return forward * head_dim_factor(curve, head_dim, false);
}

double AttentionKernelSpeed::backward_at(int64_t head_dim) const {
  return backward * head_dim_factor(curve, head_dim, true);
}

AttentionKernelSpeed attention_kernel_speed(const JobSpec& job, int sm_arch) {
  std::string_view k = job.attention_kernel;
  if (k == "auto") {
    switch (parse_stack(job.stack)) {
      case Stack::torchtitan:
      case Stack::deepspeed:
      case Stack::deepspeed_2021:
        k = "fa2";
        break;
      case Stack::composer:
        k = "triton";
        break;
      default:
        k = "cudnn";
        break;
    }
  }
  const bool ampere = sm_arch < 90;
  if (k == "fa3") {
    if (ampere) {
      throw std::invalid_argument(
          "training_job.runtime.attention_kernel: got \"fa3\" on a GPU of sm_" + std::to_string(sm_arch) +
          ", expected Hopper or later (FlashAttention-3 needs sm_90); use fa2 or cudnn");
    }
    return {"fa3", 1.0, 1.0, HeadDimCurve::fa3};
  }
  // Head-dim curves (layer_ops.h) are measured on Hopper only.
  const HeadDimCurve fa3_curve = ampere ? HeadDimCurve::none : HeadDimCurve::fa3;
  if (k == "fa2") {
    return {"fa2", ampere ? 1.0 : 0.555, ampere ? 1.0 : 0.574,
            ampere ? HeadDimCurve::none : HeadDimCurve::fa2};
  }
  // cuDNN before 9.0 (NGC containers up to 24.01): FA2's speed on both generations. On Hopper,
  // cuDNN 9.0 ran its flash kernels "up to 50%" faster than 8.9.7 (cuDNN 9.0.0 release notes)
  // and 20-50% faster than flash-attn 2 (Transformer Engine 1.7 attention docs), which puts
  // 8.9.7 between 0.8x and 1.25x FA2: FA2's measured speed is the estimate. On Ampere
  // Transformer Engine itself picked flash-attn (v1.4-1.7 DotProductAttention: FusedAttention on
  // sm90, FlashAttention elsewhere).
  if (k == "cudnn-8.9") return {"cudnn-8.9", ampere ? 1.0 : 0.555, ampere ? 1.0 : 0.574, fa3_curve};
  // LLM Foundry's 2022 Triton kernel: FlashAttention-1 class (layer_ops.h).
  if (k == "triton") {
    return {"triton", ampere ? 0.55 : 0.55 * 0.555, ampere ? 0.45 : 0.45 * 0.574, HeadDimCurve::none};
  }
  return {"cudnn", 1.0, 1.0, fa3_curve};
}

}  // namespace ct::workload

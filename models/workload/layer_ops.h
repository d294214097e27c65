// The compute operations of one transformer layer, for one micro-batch on one tensor-parallel
// rank, as the replay times them with a roofline compute model: GEMMs by shape (gemm_time(M, N,
// K)), the attention core by its dimensions (attention_time(batch, heads, seq, head_dim,
// causal)) and element-wise kernels by the bytes they move (elementwise_time(bytes)).
// Communication (TP all-gather/reduce-scatter, EP all-to-all, PP send/recv) is not listed;
// the step-graph builder inserts it between these ops.
//
// Notation: b micro-batch, s sequence, t TP, c CP, T = b s / c tokens per rank (the TP group
// shares them), h hidden, a heads, d head_dim, kv = kv_heads d, f ffn_hidden, E experts,
// k top_k, e = E / EP local experts, f_e expert width, g = 2 for swiglu (gate and up fused in
// one GEMM as Megatron-core's linear_fc1) else 1.
// Forward GEMMs C[M,N] = A[M,K] B[K,N], 2 M N K FLOPs each:
//   qkv        (T, (h + 2 kv)/t, h)          proj (T, h, h/t)
//   fc1        (T, g f/t, h)                 fc2  (T, h, f/t)
//   router     (T/t with SP else T, E, h)    (MoE)
//   shared_fc1 (T, g S f_e/t, h)             shared_fc2 (T, h, S f_e/t)
//   expert_fc1 (M_e, g f_e/t, h) x e         expert_fc2 (M_e, h, f_e/t) x e
//   with M_e = ceil(capacity_factor x T k EP / E): each EP rank receives T k assignments on
//   average (tokens are all-gathered over TP, expert weights are split by TP).
// Attention core: batch b, heads a/t, queries s/c, keys s, head dim d, causal. Its FLOPs are
// counted over the full s/c x s square, 4 b (a/t) (s/c) s d forward (Megatron/PaLM count;
// a causal kernel does about half the work, which attention_time() accounts for).
// Backward: every GEMM gives dgrad (M, K, N) and wgrad (K, N, M), i.e. 2x its forward FLOPs;
// the attention core backward is one op flagged `backward` with 2x the forward FLOPs.
// Element-wise ops, bytes read + written in bf16 (2 bytes) over X = T h / t elements with SP
// (T h without): norms 4X, residual add 6X (+ X for the dropout mask, gelu family), activation
// gelu 4 T f/t, swiglu 6 T f/t; MoE permute + unpermute 8 T k h. Backward element-wise ops move
// twice the forward bytes (read output gradient and saved input, write input gradient, plus
// weight-gradient reductions), an allowance rather than a kernel-exact count.
// Recompute: full = the whole forward list again before backward; selective = the attention
// core forward only (Korthikanti et al. MLSys'23); none = nothing.
// The output layer (last stage) adds the final norm, the logits GEMM (T, V/t, h) and the
// cross-entropy (10 T V/t bytes: bf16 logits in, fp32 softmax out and back); the embedding
// (first stage) is a lookup writing 2 T h bytes.
// Sum check (GPT, MHA, f = 4h, no recompute): l x (forward + backward) x t x c x dp x m plus
// the output layer equals 72 B s l h^2 (1 + s/(6h)) + 6 B s h V, i.e. Megatron's 72-factor form
// up to its logits term (see flops.h); layernorms, biases and element-wise ops carry no FLOPs.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/workload/model_spec.h"

namespace ct::workload {

enum class OpKind : uint8_t { gemm, attention, elementwise };

struct Op {
  std::string_view name;  // static string, e.g. "qkv", "qkv.dgrad", "attention", "input_norm"
  OpKind kind = OpKind::gemm;
  // gemm: count identical GEMMs C[m,n] = A[m,k] B[k,n]; fp8: inputs in FP8 (precision fp8)
  int64_t m = 0, n = 0, k = 0, count = 1;
  bool fp8 = false;
  bool mx = false;   // fp8 with MXFP8 block scaling (block-scaled GEMM kernels)
  bool fp4 = false;  // fp8 set too: NVFP4 inputs (E2M1, 16-element E4M3 block scales)
  // attention
  int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  int64_t window = 0;  // sliding window in tokens (ModelSpec::sliding_window); 0 = none
  bool causal = true;
  bool backward = false;
  // elementwise
  int64_t bytes = 0;

  // 2 m n k count for GEMMs; 4 batch heads seq_q seq_kv head_dim (x2 backward) for attention,
  // seq_kv no more than the window when there is one.
  double flops() const;
};

struct LayerOps {
  std::vector<Op> forward;
  std::vector<Op> backward;
  std::vector<Op> recompute;  // run before backward

  double forward_flops() const;
  double backward_flops() const;
  double recompute_flops() const;
};

Op gemm(std::string_view name, int64_t m, int64_t n, int64_t k, int64_t count = 1);
// dgrad (m, k, n) and wgrad (k, n, m) of a forward GEMM.
Op gemm_dgrad(const Op& fwd, std::string_view name);
Op gemm_wgrad(const Op& fwd, std::string_view name);

// Flash-attention kernels, relative to the calibrated one. The calibration timed PyTorch
// 2.11's SDPA on H200, which dispatches to cuDNN there (cuDNN >= 9.15; PyTorch
// sdp_utils.cpp check_prefer_cudnn_attention) and runs at FlashAttention-3's published speed:
// causal forward, head dim 128, 16 heads, 4k / 8k / 16k tokens, 579 / 612 / 630 TFLOP/s
// measured (models/hardware/data/h200-kernels.json) against FA3's 579 / 602 / 616 on H100
// (Shah et al. 2024, Fig. 5), and 561 against 561 backward at 16k (Fig. 6). So cudnn and fa3
// are both 1.0; the 2024 cuDNN 9.1 of that paper was 0.87-0.92 of FA3 at 16k and is not a
// separate choice. The other kernels, from the same figures (H100, head dim 128, 2k-16k):
//   fa2    forward (causal)  298/521 319/579 333/602 335/616 -> 0.555; backward 291/501 310/542
//          318/559 322/561 -> 0.574 (FA2 has no Hopper wgmma/TMA path);
//   triton is LLM Foundry's kernel: Tri Dao's 2022 flash_attn_triton.py, copied into
//          llmfoundry/models/layers/flash_attn_triton.py on Triton 2.0.0.dev20221202
//          (triton_pre_mlir), not the 2024 Triton tutorial kernel the FA2 / FA3 papers plot.
//          Its header: forward "generally faster" than FlashAttention-1's CUDA kernel, backward
//          "generally slower", forward + backward "slightly slower". FlashAttention-2 is "around
//          2x" FlashAttention-1 (Dao 2023, abstract). So forward 1.1 x 0.5 = 0.55 of FA2 and,
//          for forward + backward at 0.95 x FA1's with backward 2.5x the forward's FLOPs,
//          backward 0.45 of FA2: on Ampere 0.55 / 0.45, on Hopper (pre-MLIR Triton has no
//          Hopper path, as FA2) 0.55 x 0.555 = 0.305 / 0.45 x 0.574 = 0.258. An estimate.
// cudnn-8.9 (cuDNN 8.9.x, NGC containers up to 24.01): FA2's speed, an estimate from cuDNN
// 9.0's "up to 50% over 8.9.7 on Hopper" and TE 1.7's "cuDNN 20-50% faster than flash-attn 2
// on Hopper" (layer_ops.cpp). On Ampere FA2 is the native kernel and cuDNN is not faster (TE
// docs; PyTorch #192799: forward 135 vs 136 TF/s): fa2 1.0, triton 0.55 / 0.45; FA3 needs
// Hopper (an error before sm_90).
// Stack defaults (auto): megatron-core, nemo: cudnn (Transformer Engine's FusedAttention on
// Hopper); pytorch: cudnn (torch 2.11's SDPA default, the calibration's); torchtitan,
// deepspeed: fa2 (PyTorch SDPA's FLASH backend in torch 2.5.1-2.10, pytorch#138522 made cuDNN
// opt-in; flash-attn 2); composer: triton (LLM Foundry's attn_impl default in 2023).
//
// Head dimension. The speeds above are at head dim 128 (the calibration's and the figures').
// On Hopper and later, other head dims run at the kernel's measured plateau ratio to head dim
// 128 (FlashAttention-3 paper, Shah et al. 2024, Figs. 5-6, H100 SXM5 BF16, the mean of the 8k
// and 16k bars; the causal forward panels; the backward panels have no mask split):
//   fa3, cudnn (and cudnn-8.9, a cuDNN kernel: cuDNN 9.1's own bars give forward 0.64-0.69 and
//          backward 0.84 at hd 64, near FA3's): forward hd 64 460/602 473/616 -> 0.766,
//          hd 256 628/602 642/616 -> 1.042; backward hd 64 472/559 474/561 -> 0.845, hd 256
//          not plotted (FA3 had no hd-256 backward then): 1.0, extrapolated;
//   fa2: forward hd 64 295/333 299/335 -> 0.889, hd 256 297/333 298/335 -> 0.891; backward hd
//          64 287/318 291/322 -> 0.903, hd 256: 1.0, extrapolated.
// Piecewise linear in log2(head dim) between 64, 128 and 256, flat outside (a smaller head dim
// is likely slower still: not measured). Blackwell takes the Hopper ratios: extrapolated (the
// report says so).
// Not applied (1.0, not measured): every kernel before Hopper, and LLM Foundry's 2022 Triton
// kernel (the figures' Triton is the 2024 tutorial kernel). Multi-head latent attention runs at
// its mean head width (attention_head_width).
enum class HeadDimCurve { fa3, fa2, none };
struct AttentionKernelSpeed {
  std::string_view name;
  double forward = 1.0, backward = 1.0;  // at head dim 128
  HeadDimCurve curve = HeadDimCurve::fa3;
  // Speed relative to the calibrated kernel at head dim 128, at this head dim.
  [[nodiscard]] double forward_at(int64_t head_dim) const;
  [[nodiscard]] double backward_at(int64_t head_dim) const;
};
AttentionKernelSpeed attention_kernel_speed(const JobSpec& job, int sm_arch);

// Whether the layer's element-wise ops run as eager PyTorch's composite kernels (Llama blocks
// on the torchtitan, pytorch or composer stacks without torch.compile; layer_ops.cpp). On the
// pytorch stack (PyTorch 2.11) RMSNorm is one fused kernel; rotary and SwiGLU stay composite.
bool eager_llama(const JobSpec& job);
// Whether the stack runs the layer's element-wise ops as eager PyTorch kernels (torchtitan,
// pytorch, composer without torch.compile): rotary embeddings then cost a kernel of their own.
bool eager_pytorch(const JobSpec& job);
// Copies of each K/V head the stack hands the attention kernel: heads / kv_heads where it
// materialises grouped-query K and V before SDPA (torchtitan's repeat_kv; not with latent
// attention), else 1. The copy costs a kernel (transformer_layer_ops), and PyTorch's ring
// attention exchanges the copies (replay/block_costs.cpp).
double attention_kv_copies(const JobSpec& job);

// One transformer layer, one micro-batch, one TP rank (assumes a validated job).
LayerOps transformer_layer_ops(const JobSpec& job);
// Final norm, logits GEMM and cross-entropy on the last pipeline stage.
LayerOps output_layer_ops(const JobSpec& job);
// Embedding lookup on the first pipeline stage.
LayerOps embedding_ops(const JobSpec& job);

}  // namespace ct::workload

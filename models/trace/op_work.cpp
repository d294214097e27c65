// Operator -> compute-model work (rules in op_work.h).
#include "models/trace/op_work.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace ct::trace {
namespace {

using Kind = OpWork::Kind;
using hardware::MemoryOp;

struct AttentionArgs {
  bool backward;
  int query;   // argument index of the query
  int causal;  // index of is_causal, or of custom_mask_type when mask_type
  bool mask_type;
  bool seq_major;  // query is [b, s, h, d]
};

// PyTorch 2.x native_functions.yaml signatures.
const std::unordered_map<std::string, AttentionArgs>& attention_ops() {
  static const std::unordered_map<std::string, AttentionArgs> ops = {
      {"scaled_dot_product_attention", {false, 0, 5, false, false}},
      {"_scaled_dot_product_flash_attention", {false, 0, 4, false, false}},
      {"_scaled_dot_product_efficient_attention", {false, 0, 6, false, false}},
      {"_scaled_dot_product_cudnn_attention", {false, 0, 6, false, false}},
      {"_flash_attention_forward", {false, 0, 8, false, true}},
      {"_efficient_attention_forward", {false, 0, 9, true, true}},
      {"_cudnn_attention_forward", {false, 0, 10, false, false}},
      {"_scaled_dot_product_flash_attention_backward", {true, 1, 11, false, false}},
      {"_scaled_dot_product_efficient_attention_backward", {true, 1, 11, false, false}},
      {"_scaled_dot_product_cudnn_attention_backward", {true, 1, 14, false, false}},
      {"_flash_attention_backward", {true, 1, 11, false, true}},
      {"_efficient_attention_backward", {true, 1, 14, true, true}},
      {"_cudnn_attention_backward", {true, 1, 14, false, false}},
  };
  return ops;
}

MemoryOp memory_class_of(const std::string& name) {
  static const std::unordered_set<std::string> norm = {
      "layer_norm", "native_layer_norm", "native_layer_norm_backward",
      "rms_norm",   "_fused_rms_norm",   "_fused_rms_norm_backward",
      "group_norm", "native_group_norm", "native_group_norm_backward"};
  static const std::unordered_set<std::string> softmax = {"softmax",
                                                          "_softmax",
                                                          "log_softmax",
                                                          "_log_softmax",
                                                          "_softmax_backward_data",
                                                          "_log_softmax_backward_data"};
  if (norm.count(name) != 0) return MemoryOp::normalization;
  if (softmax.count(name) != 0) return MemoryOp::softmax;
  return MemoryOp::streaming;
}

bool is_memory_op(const std::string& name) {
  static const std::unordered_set<std::string> ops = {"add",
                                                      "add_",
                                                      "sub",
                                                      "sub_",
                                                      "rsub",
                                                      "mul",
                                                      "mul_",
                                                      "div",
                                                      "div_",
                                                      "neg",
                                                      "gelu",
                                                      "gelu_",
                                                      "gelu_backward",
                                                      "silu",
                                                      "silu_",
                                                      "silu_backward",
                                                      "relu",
                                                      "relu_",
                                                      "threshold_backward",
                                                      "tanh",
                                                      "tanh_backward",
                                                      "sigmoid",
                                                      "sigmoid_backward",
                                                      "exp",
                                                      "log",
                                                      "pow",
                                                      "sqrt",
                                                      "rsqrt",
                                                      "dropout",
                                                      "native_dropout",
                                                      "native_dropout_backward",
                                                      "copy_",
                                                      "clone",
                                                      "_to_copy",
                                                      "fill_",
                                                      "zero_",
                                                      "zeros_like",
                                                      "ones_like",
                                                      "masked_fill",
                                                      "masked_fill_",
                                                      "where",
                                                      "cat",
                                                      "sum",
                                                      "mean",
                                                      "addcmul_",
                                                      "addcdiv_",
                                                      "lerp_",
                                                      "_fused_adam_",
                                                      "_fused_adamw_",
                                                      "_amp_foreach_non_finite_check_and_unscale_"};
  return ops.count(name) != 0 || name.rfind("_foreach_", 0) == 0 ||
         memory_class_of(name) != MemoryOp::streaming;
}

const TensorInfo* tensor_arg(const OpView& op, size_t i) {
  if (i >= op.inputs.size() || op.inputs[i].kind != Arg::Kind::tensor) return nullptr;
  const TensorInfo& t = op.inputs[i].tensors.front();
  return t.defined() || !t.shape.empty() ? &t : nullptr;
}

bool half(const TensorInfo* t) { return t != nullptr && t->elem_size == 2; }

OpWork not_modelled(OpWork w, std::string why) {
  w.modelled = false;
  w.why = std::move(why);
  return w;
}

// Dimensions beyond 2^31 are no real tensor's; refusing them keeps the model's integer maths safe.
constexpr int64_t kMaxDim = int64_t{1} << 31;

OpWork gemm(OpWork w, int64_t m, int64_t n, int64_t k, int64_t count) {
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return not_modelled(std::move(w), "empty GEMM");
  if (m >= kMaxDim || n >= kMaxDim || k >= kMaxDim || count >= kMaxDim ||
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(count) > 1e18) {
    return not_modelled(std::move(w), "dimension out of range");
  }
  w.m = m;
  w.n = n;
  w.k = k;
  w.count = count;
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  w.flops = 2.0 * md * nd * kd * static_cast<double>(count);
  w.bytes = 2.0 * (md * kd + kd * nd + md * nd) * static_cast<double>(count);
  w.modelled = true;
  return w;
}

OpWork gemm_work(const OpView& op, const std::string& name) {
  OpWork w;
  w.kind = Kind::gemm;
  const bool add = name == "addmm" || name == "baddbmm";
  const TensorInfo* a = tensor_arg(op, add ? 1 : 0);
  const TensorInfo* b = tensor_arg(op, add ? 2 : 1);
  if (a == nullptr || b == nullptr) return not_modelled(w, "no operand shapes");
  if (!half(a) || !half(b)) return not_modelled(w, "operands are not 16-bit (" + a->dtype + ")");
  const auto& x = a->shape;
  const auto& y = b->shape;
  if (name == "mm" || name == "addmm") {
    if (x.size() != 2 || y.size() != 2) return not_modelled(w, "operands are not 2-D");
    return gemm(w, x[0], y[1], x[1], 1);
  }
  if (name == "bmm" || name == "baddbmm") {
    if (x.size() != 3 || y.size() != 3) return not_modelled(w, "operands are not 3-D");
    return gemm(w, x[1], y[2], x[2], x[0]);
  }
  if (name == "linear") {
    if (x.empty() || y.size() != 2 || x.back() <= 0) return not_modelled(w, "bad linear shapes");
    return gemm(w, a->numel / x.back(), y[0], x.back(), 1);
  }
  // matmul
  if (x.empty() || y.empty() || x.back() <= 0) return not_modelled(w, "bad matmul shapes");
  if (y.size() == 1) return gemm(w, a->numel / x.back(), 1, x.back(), 1);
  if (y.size() == 2) return gemm(w, x.size() == 1 ? 1 : a->numel / x.back(), y[1], x.back(), 1);
  if (x.size() < 2) {
    const double inner = static_cast<double>(y[y.size() - 2]) * static_cast<double>(y.back());
    if (!(inner > 0)) return not_modelled(w, "bad matmul shapes");
    return gemm(w, 1, y.back(), x.back(), static_cast<int64_t>(static_cast<double>(b->numel) / inner));
  }
  // Both at least 2-D: the batch dims (all but the last two) broadcast, right-aligned.
  const size_t bx = x.size() - 2, by = y.size() - 2, nb = std::max(bx, by);
  double count = 1;
  for (size_t i = 0; i < nb; ++i) {
    const int64_t dx = i < nb - bx ? 1 : x[i - (nb - bx)];
    const int64_t dy = i < nb - by ? 1 : y[i - (nb - by)];
    count *= static_cast<double>(std::max(dx, dy));
  }
  if (!(count < static_cast<double>(kMaxDim))) return not_modelled(w, "dimension out of range");
  return gemm(w, x[x.size() - 2], y.back(), x.back(), static_cast<int64_t>(count));
}

bool truthy(const std::string& s) { return s == "True" || s == "true" || s == "1"; }

OpWork attention_work(const OpView& op, const AttentionArgs& spec) {
  OpWork w;
  w.kind = spec.backward ? Kind::attention_backward : Kind::attention_forward;
  const TensorInfo* q = tensor_arg(op, static_cast<size_t>(spec.query));
  if (q == nullptr || q->shape.size() != 4) return not_modelled(w, "query is not a 4-D tensor");
  if (static_cast<size_t>(spec.causal) >= op.inputs.size() ||
      op.inputs[static_cast<size_t>(spec.causal)].kind != Arg::Kind::scalar) {
    return not_modelled(w, "no causal argument");
  }
  const std::string& c = op.inputs[static_cast<size_t>(spec.causal)].scalar;
  w.causal = spec.mask_type ? (!c.empty() && c != "0") : truthy(c);
  const auto& s = q->shape;
  w.batch = s[0];
  w.heads = spec.seq_major ? s[2] : s[1];
  w.seq = spec.seq_major ? s[1] : s[2];
  w.head_dim = s[3];
  if (w.batch <= 0 || w.heads <= 0 || w.seq <= 0 || w.head_dim <= 0)
    return not_modelled(w, "empty attention");
  if (w.batch >= kMaxDim || w.heads >= kMaxDim || w.seq >= kMaxDim || w.head_dim >= kMaxDim) {
    return not_modelled(w, "dimension out of range");
  }
  const double bh = static_cast<double>(w.batch) * static_cast<double>(w.heads);
  const double s2 = static_cast<double>(w.seq) * static_cast<double>(w.seq);
  const double full = 4.0 * bh * s2 * static_cast<double>(w.head_dim);
  const double fwd = w.causal ? full / 2 : full;
  const double qkv = 2.0 * bh * static_cast<double>(w.seq) * static_cast<double>(w.head_dim);
  w.flops = spec.backward ? 2.5 * fwd : fwd;
  w.bytes = spec.backward ? 8 * qkv : 4 * qkv;
  w.modelled = true;
  return w;
}

OpWork memory_work(const OpView& op, const std::string& name) {
  OpWork w;
  w.kind = Kind::memory;
  w.memory_class = memory_class_of(name);
  w.memory_op = name;
  const bool write_only_self = name == "copy_" || name == "fill_" || name == "zero_";
  double bytes = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (i == 0 && write_only_self) continue;
    for (const TensorInfo& t : op.inputs[i].tensors) bytes += t.defined() ? t.bytes() : 0.0;
  }
  if (op.outputs_known) {
    for (const Arg& a : op.outputs) {
      for (const TensorInfo& t : a.tensors) bytes += t.defined() ? t.bytes() : 0.0;
    }
  } else if (name.back() == '_' && !op.inputs.empty()) {
    for (const TensorInfo& t : op.inputs[0].tensors) bytes += t.defined() ? t.bytes() : 0.0;
  } else {
    return not_modelled(w, "output sizes unknown without the execution trace");
  }
  if (bytes <= 0) return not_modelled(w, "no tensor bytes");
  if (bytes > 1e15) return not_modelled(w, "size out of range");
  w.bytes = bytes;
  w.modelled = true;
  return w;
}

}  // namespace

OpWork op_work(const OpView& op) {
  const std::string name = op.name.rfind("aten::", 0) == 0 ? op.name.substr(6) : op.name;
  if (name == "mm" || name == "addmm" || name == "bmm" || name == "baddbmm" || name == "linear" ||
      name == "matmul") {
    return gemm_work(op, name);
  }
  const auto& attn = attention_ops();
  if (const auto it = attn.find(name); it != attn.end()) return attention_work(op, it->second);
  if (!name.empty() && is_memory_op(name)) return memory_work(op, name);
  return {};
}

double modelled_seconds(const OpWork& w, const hardware::ComputeModel& model) {
  using hardware::AttentionPass;
  switch (w.kind) {
    case Kind::gemm:
      return model.gemm_time(w.m, w.n, w.k, w.count).seconds();
    case Kind::attention_forward:
      return model.attention_time(w.batch, w.heads, w.seq, w.head_dim, w.causal, AttentionPass::forward)
          .seconds();
    case Kind::attention_backward:
      return model
                 .attention_time(w.batch, w.heads, w.seq, w.head_dim, w.causal,
                                 AttentionPass::forward_backward)
                 .seconds() -
             model.attention_time(w.batch, w.heads, w.seq, w.head_dim, w.causal, AttentionPass::forward)
                 .seconds();
    case Kind::memory:
      return model.elementwise_time(sim::Bytes{static_cast<int64_t>(w.bytes)}, w.memory_class).seconds();
    case Kind::none:
      break;
  }
  return 0.0;
}

bool compute_bound(const OpWork& w, const hardware::GpuSpec& gpu) {
  if (w.kind == Kind::none || w.kind == Kind::memory || w.bytes <= 0) return false;
  return w.flops / w.bytes >= gpu.bf16_dense_flops / gpu.hbm_bytes_per_s;
}

}  // namespace ct::trace

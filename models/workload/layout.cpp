#include "models/workload/layout.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ct::workload {
namespace {

constexpr const char* kModel = "training_job.model.";
constexpr const char* kPar = "training_job.parallelism.";

class Errors {
 public:
  std::ostringstream& add() {
    items_.emplace_back();
    return items_.back();
  }
  void throw_if_any() const {
    if (items_.empty()) return;
    std::string msg = "invalid training_job:";
    for (const auto& e : items_) msg += "\n  " + e.str();
    throw std::invalid_argument(msg);
  }

 private:
  std::vector<std::ostringstream> items_;
};

void positive(Errors& err, const std::string& key, int64_t value) {
  if (value < 1) err.add() << key << " = " << value << " must be >= 1";
}

// "<divisor_key> (d) must divide <dividend_key> (n)": n % d != 0.
void divides(Errors& err, const std::string& divisor_key, int64_t divisor, const std::string& dividend_key,
             int64_t dividend) {
  if (divisor < 1 || dividend < 0) return;  // reported by positive()
  if (dividend % divisor != 0) {
    err.add() << divisor_key << " = " << divisor << " must divide " << dividend_key << " = " << dividend
              << " (remainder " << dividend % divisor << ")";
  }
}

}  // namespace

Recompute parse_recompute(const std::string& g) {
  if (g == "none") return Recompute::none;
  if (g == "selective") return Recompute::selective;
  if (g == "full") return Recompute::full;
  throw std::invalid_argument("training_job.runtime.recompute_granularity = \"" + g +
                              "\" must be one of none|selective|full");
}

int64_t gpus_used(const ParallelSpec& p) {
  return int64_t{p.tensor_parallel} * p.pipeline_parallel * p.data_parallel * p.context_parallel;
}

int64_t zero_shard_degree(const ParallelSpec& p) {
  return p.shard_size > 0 ? p.shard_size : int64_t{p.data_parallel} * p.context_parallel;
}

int64_t microbatches(const JobSpec& job) {
  return job.global_batch_size / (job.micro_batch_size * job.parallelism.data_parallel);
}

int64_t layers_in_virtual_stage(const JobSpec& job, int64_t virtual_stage) {
  const int64_t V = int64_t{job.parallelism.pipeline_parallel} * job.parallelism.virtual_pipeline;
  const int64_t base = (job.model.layers + V - 1) / V;
  const int64_t deficit = V * base - job.model.layers;
  // The k-th lighter virtual stage, alternating from the ends: 0, V-1, 1, V-2, ...
  const int64_t from_end = std::min(virtual_stage, V - 1 - virtual_stage);
  const int64_t rank = 2 * from_end + (virtual_stage == from_end ? 0 : 1);
  return base - (rank < deficit ? 1 : 0);
}

namespace {

// A per-virtual-stage count summed over one pipeline rank's chunks (chunk c is virtual stage
// c p + s).
int64_t over_chunks(const JobSpec& job, int stage, int64_t (*per_virtual_stage)(const JobSpec&, int64_t)) {
  int64_t n = 0;
  for (int c = 0; c < job.parallelism.virtual_pipeline; ++c)
    n += per_virtual_stage(job, int64_t{c} * job.parallelism.pipeline_parallel + stage);
  return n;
}

}  // namespace

int64_t layers_in_chunk(const JobSpec& job, int stage, int chunk) {
  return layers_in_virtual_stage(job, int64_t{chunk} * job.parallelism.pipeline_parallel + stage);
}

int64_t layers_in_stage(const JobSpec& job, int stage) {
  return over_chunks(job, stage, layers_in_virtual_stage);
}

int64_t dense_layers_in_virtual_stage(const JobSpec& job, int64_t virtual_stage) {
  const int64_t k = dense_layers(job.model);
  if (k <= 0) return 0;
  int64_t first = 0;  // global index of the virtual stage's first layer
  for (int64_t u = 0; u < virtual_stage && first < k; ++u) first += layers_in_virtual_stage(job, u);
  return std::clamp<int64_t>(k - first, 0, layers_in_virtual_stage(job, virtual_stage));
}

int64_t first_layer_of_chunk(const JobSpec& job, int stage, int chunk) {
  const int64_t virtual_stage = int64_t{chunk} * job.parallelism.pipeline_parallel + stage;
  int64_t first = 0;
  for (int64_t u = 0; u < virtual_stage; ++u) first += layers_in_virtual_stage(job, u);
  return first;
}

int64_t dense_layers_in_chunk(const JobSpec& job, int stage, int chunk) {
  return dense_layers_in_virtual_stage(job, int64_t{chunk} * job.parallelism.pipeline_parallel + stage);
}

int64_t dense_layers_in_stage(const JobSpec& job, int stage) {
  return over_chunks(job, stage, dense_layers_in_virtual_stage);
}

int64_t recomputed_layers_in_chunk(const JobSpec& job, int stage, int chunk) {
  const int64_t n = layers_in_chunk(job, stage, chunk);
  if (job.recompute_granularity != "full") return 0;
  return job.recompute_layers <= 0 ? n : std::min<int64_t>(n, job.recompute_layers);
}

int64_t recomputed_layers_in_stage(const JobSpec& job, int stage) {
  int64_t n = 0;
  for (int c = 0; c < job.parallelism.virtual_pipeline; ++c) n += recomputed_layers_in_chunk(job, stage, c);
  return n;
}

double recomputed_layer_fraction(const JobSpec& job) {
  if (job.recompute_granularity != "full") return job.recompute_granularity == "selective" ? 1.0 : 0.0;
  int64_t n = 0;
  for (int s = 0; s < job.parallelism.pipeline_parallel; ++s) n += recomputed_layers_in_stage(job, s);
  return job.model.layers > 0 ? static_cast<double>(n) / static_cast<double>(job.model.layers) : 0.0;
}

int64_t layers_per_stage(const JobSpec& job) {
  int64_t most = 0;
  for (int s = 0; s < job.parallelism.pipeline_parallel; ++s) most = std::max(most, layers_in_stage(job, s));
  return most;
}

int64_t layers_per_chunk(const JobSpec& job) {
  const int64_t V = int64_t{job.parallelism.pipeline_parallel} * job.parallelism.virtual_pipeline;
  return (job.model.layers + V - 1) / V;
}

namespace {

// Multi-head latent attention's widths: all of them with kv_lora_rank, none without; its heads
// carry their own widths and share no KV heads.
void check_mla(Errors& err, const ModelSpec& m) {
  const std::string M = kModel, A = M + "mla.";
  const MlaSpec& a = m.mla;
  const std::pair<const char*, int64_t> fields[] = {{"q_lora_rank", a.q_lora_rank},
                                                    {"kv_lora_rank", a.kv_lora_rank},
                                                    {"qk_nope_head_dim", a.qk_nope_head_dim},
                                                    {"qk_rope_head_dim", a.qk_rope_head_dim},
                                                    {"v_head_dim", a.v_head_dim}};
  for (const auto& [name, value] : fields) {
    if (value < 0) err.add() << A << name << " = " << value << " must be >= 0";
  }
  if (a.kv_lora_rank <= 0) {
    for (const auto& [name, value] : fields) {
      if (value > 0) err.add() << A << name << " = " << value << " needs " << A << "kv_lora_rank > 0";
    }
    return;
  }
  if (a.qk_nope_head_dim <= 0)
    err.add() << A << "qk_nope_head_dim = " << a.qk_nope_head_dim << " must be > 0";
  if (a.v_head_dim <= 0) err.add() << A << "v_head_dim = " << a.v_head_dim << " must be > 0";
  if (m.head_dim != 0) {
    err.add() << M << "head_dim = " << m.head_dim << " must be 0 with " << A
              << "kv_lora_rank (latent attention sets its own head widths)";
  }
  if (m.kv_heads != 0 && m.kv_heads != m.heads) {
    err.add() << M << "kv_heads = " << m.kv_heads << " must be 0 or " << M << "heads = " << m.heads
              << " with " << A << "kv_lora_rank (every head has its own K and V)";
  }
}

// The model's own fields.
void check_model(Errors& err, const JobSpec& job) {
  const ModelSpec& m = job.model;
  const std::string M = kModel;
  const std::string E = M + "moe.";
  positive(err, M + "layers", m.layers);
  positive(err, M + "hidden", m.hidden);
  positive(err, M + "heads", m.heads);
  positive(err, M + "seq_length", m.seq_length);
  positive(err, M + "vocab", m.vocab);
  if (m.kv_heads < 0) err.add() << M << "kv_heads = " << m.kv_heads << " must be >= 0";
  if (m.ffn_hidden < 0) err.add() << M << "ffn_hidden = " << m.ffn_hidden << " must be >= 0";
  if (m.activation != "gelu" && m.activation != "swiglu") {
    err.add() << M << "activation = \"" << m.activation << "\" must be gelu or swiglu";
  }
  if (m.head_dim < 0) err.add() << M << "head_dim = " << m.head_dim << " must be >= 0";
  if (m.sliding_window < 0) err.add() << M << "sliding_window = " << m.sliding_window << " must be >= 0";
  if (m.full_attention_every < 0) {
    err.add() << M << "full_attention_every = " << m.full_attention_every << " must be >= 0";
  } else if (m.full_attention_every > 0 && m.sliding_window <= 0) {
    err.add() << M << "full_attention_every = " << m.full_attention_every << " needs " << M
              << "sliding_window > 0 (without a window every layer attends to the whole sequence)";
  }
  if (m.head_dim == 0 && !is_mla(m)) divides(err, M + "heads", m.heads, M + "hidden", m.hidden);
  if (m.kv_heads > 0) divides(err, M + "kv_heads", m.kv_heads, M + "heads", m.heads);

  check_mla(err, m);
  if (m.moe.experts < 0) err.add() << E << "experts = " << m.moe.experts << " must be >= 0";
  if (m.moe.experts > 0) {
    if (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts) {
      err.add() << E << "top_k = " << m.moe.top_k << " must be in 1.." << E << "experts = " << m.moe.experts;
    }
    if (m.moe.shared_experts < 0) {
      err.add() << E << "shared_experts = " << m.moe.shared_experts << " must be >= 0";
    }
    if (m.moe.expert_ffn_hidden < 0) {
      err.add() << E << "expert_ffn_hidden = " << m.moe.expert_ffn_hidden << " must be >= 0";
    }
    if (!(m.moe.capacity_factor > 0.0)) {
      err.add() << E << "capacity_factor = " << m.moe.capacity_factor << " must be > 0";
    }
    if (m.moe.dense_layers < 0 || (m.layers > 0 && m.moe.dense_layers >= m.layers)) {
      err.add() << E << "dense_layers = " << m.moe.dense_layers << " must be in 0.." << M
                << "layers - 1 = " << m.layers - 1 << " (an MoE model keeps at least one MoE layer)";
    }
  } else if (m.moe.dense_layers != 0) {
    err.add() << E << "dense_layers = " << m.moe.dense_layers << " needs " << E
              << "experts > 0 (the leading dense layers of an MoE model)";
  }
}

// Each parallelism, batch and runtime field on its own.
void check_fields(Errors& err, const JobSpec& job) {
  const ParallelSpec& p = job.parallelism;
  const std::string P = kPar;
  positive(err, P + "tensor_parallel", p.tensor_parallel);
  positive(err, P + "pipeline_parallel", p.pipeline_parallel);
  positive(err, P + "data_parallel", p.data_parallel);
  positive(err, P + "virtual_pipeline", p.virtual_pipeline);
  positive(err, P + "context_parallel", p.context_parallel);
  positive(err, P + "expert_parallel", p.expert_parallel);
  positive(err, "training_job.global_batch_size", job.global_batch_size);
  positive(err, "training_job.micro_batch_size", job.micro_batch_size);
  if (p.zero_stage < 0 || p.zero_stage > 3) {
    err.add() << P << "zero_stage = " << p.zero_stage << " must be 0, 1, 2 or 3";
  }
  if (job.recompute_granularity != "none" && job.recompute_granularity != "selective" &&
      job.recompute_granularity != "full") {
    err.add() << "training_job.runtime.recompute_granularity = \"" << job.recompute_granularity
              << "\" must be one of none|selective|full";
  }

  if (p.shard_size < 0) err.add() << P << "shard_size = " << p.shard_size << " must be >= 0";
  if (p.shard_size > 0) {
    if (p.zero_stage < 1) {
      err.add() << P << "shard_size = " << p.shard_size << " needs " << P << "zero_stage >= 1 (got "
                << p.zero_stage << "): without ZeRO nothing is sharded";
    }
    if (p.context_parallel > 1) {
      err.add() << P << "shard_size = " << p.shard_size << " with " << P
                << "context_parallel = " << p.context_parallel
                << " is not modelled: hybrid sharding needs context_parallel = 1";
    }
    divides(err, P + "shard_size", p.shard_size, P + "data_parallel", p.data_parallel);
    if (p.expert_parallel > 1)
      divides(err, P + "expert_parallel", p.expert_parallel, P + "shard_size", p.shard_size);
  }
  if (job.precision != "bf16" && !is_fp8(job)) {
    err.add() << "training_job.runtime.precision = \"" << job.precision
              << "\" must be bf16, fp8, fp8-cs, mxfp8 or nvfp4";
  }
  if (job.recompute_layers < 0) {
    err.add() << "training_job.runtime.recompute_layers = " << job.recompute_layers << " must be >= 0";
  } else if (job.recompute_layers > 0 && job.recompute_granularity != "full") {
    err.add() << "training_job.runtime.recompute_layers = " << job.recompute_layers
              << " needs training_job.runtime.recompute_granularity = \"full\" (got \""
              << job.recompute_granularity << "\")";
  }
}

// How the layout splits the model and the batch: TP over heads and widths, pipeline stages
// over layers, DP over the batch, EP over experts, CP over the sequence.
void check_splits(Errors& err, const JobSpec& job) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallelism;
  const std::string M = kModel;
  const std::string P = kPar;
  const std::string E = M + "moe.";
  // Tensor parallelism splits heads, kv heads (query groups) and the MLP width.
  divides(err, P + "tensor_parallel", p.tensor_parallel, M + "heads", m.heads);
  if (m.heads > 0) {
    divides(err, P + "tensor_parallel", p.tensor_parallel,
            m.kv_heads > 0 ? M + "kv_heads" : M + "kv_heads (= heads)", kv_heads(m));
  }
  if (m.moe.experts == 0 && m.ffn_hidden >= 0 && m.hidden > 0) {
    divides(err, P + "tensor_parallel", p.tensor_parallel,
            m.ffn_hidden > 0 ? M + "ffn_hidden" : M + "ffn_hidden (default)", ffn_hidden(m));
  }
  if (p.expert_tensor_parallel < 0) {
    err.add() << P << "expert_tensor_parallel = " << p.expert_tensor_parallel << " must be >= 0";
  } else if (p.expert_tensor_parallel > 0) {
    if (m.moe.experts == 0) {
      err.add() << P << "expert_tensor_parallel = " << p.expert_tensor_parallel << " needs " << E
                << "experts > 0 (the model is dense)";
    }
    divides(err, P + "expert_tensor_parallel", p.expert_tensor_parallel, P + "tensor_parallel",
            p.tensor_parallel);
  }
  if (m.moe.experts > 0 && m.moe.expert_ffn_hidden >= 0 && m.hidden > 0 && expert_tp(p) > 0) {
    divides(err, P + (p.expert_tensor_parallel > 0 ? "expert_tensor_parallel" : "tensor_parallel"),
            expert_tp(p),
            m.moe.expert_ffn_hidden > 0 ? E + "expert_ffn_hidden" : E + "expert_ffn_hidden (= ffn_hidden)",
            expert_ffn_hidden(m));
  }

  // Pipeline: when the virtual stages do not divide the layers, the stages at the ends hold
  // one fewer (layout.h); the first and the last may hold none, only the embedding and the
  // loss (Megatron's --account-for-embedding-in-pipeline-split and --account-for-loss-in-
  // pipeline-split: 126 layers + 2 on 128 virtual stages), every other one at least one layer.
  if (p.pipeline_parallel >= 1 && p.virtual_pipeline >= 1 && m.layers >= 1 &&
      m.layers + 2 < int64_t{p.pipeline_parallel} * p.virtual_pipeline) {
    err.add() << P << "pipeline_parallel x " << P << "virtual_pipeline = " << p.pipeline_parallel << " x "
              << p.virtual_pipeline << " = " << int64_t{p.pipeline_parallel} * p.virtual_pipeline
              << " virtual stages need at least " << M
              << "layers + 2 (the end stages may hold only the embedding and the loss), got " << m.layers;
  }

  // Batch: global = micro x DP x m.
  if (job.micro_batch_size >= 1 && p.data_parallel >= 1 && job.global_batch_size >= 1 &&
      job.global_batch_size % (job.micro_batch_size * p.data_parallel) != 0) {
    err.add() << "training_job.global_batch_size = " << job.global_batch_size
              << " must be divisible by training_job.micro_batch_size x " << P
              << "data_parallel = " << job.micro_batch_size << " x " << p.data_parallel << " = "
              << job.micro_batch_size * p.data_parallel;
  }

  // Experts: EP splits the experts; the EP group is carved out of DP x CP, or with folding
  // (expert_tensor_parallel below TP) out of TP x CP x DP in groups of EP x ETP.
  if (p.expert_parallel > 1 && m.moe.experts == 0) {
    err.add() << P << "expert_parallel = " << p.expert_parallel << " needs " << E
              << "experts > 0 (the model is dense)";
  }
  if (m.moe.experts > 0) {
    divides(err, P + "expert_parallel", p.expert_parallel, E + "experts", m.moe.experts);
  }
  const int etp = expert_tp(p);
  if (p.expert_parallel >= 1 && p.data_parallel >= 1 && p.context_parallel >= 1 && etp >= 1 &&
      p.tensor_parallel >= 1 && p.tensor_parallel % etp == 0) {
    const int64_t folded = int64_t{p.tensor_parallel} / etp * p.data_parallel * p.context_parallel;
    if (folded % p.expert_parallel != 0) {
      err.add() << P << "expert_parallel = " << p.expert_parallel << " must divide " << P
                << "data_parallel x " << P << "context_parallel"
                << (etp < p.tensor_parallel ? " x " + P + "tensor_parallel / " + P + "expert_tensor_parallel"
                                            : "")
                << " = " << p.data_parallel << " x " << p.context_parallel
                << (etp < p.tensor_parallel
                        ? " x " + std::to_string(p.tensor_parallel) + " / " + std::to_string(etp)
                        : std::string())
                << " = " << folded;
    }
  }

  // Context parallelism: load-balanced causal CP splits the sequence into 2 CP chunks.
  if (p.context_parallel > 1 && m.seq_length >= 1 && m.seq_length % (2 * int64_t{p.context_parallel}) != 0) {
    err.add() << "2 x " << P << "context_parallel = " << 2 * int64_t{p.context_parallel} << " must divide "
              << M << "seq_length = " << m.seq_length << " (load-balanced causal context parallelism)";
  }
}

}  // namespace

void validate(const JobSpec& job, int64_t gpus_in_cluster) {
  const ParallelSpec& p = job.parallelism;
  const std::string P = kPar;
  Errors err;
  check_model(err, job);
  check_fields(err, job);
  check_splits(err, job);

  // GPUs.
  if (p.tensor_parallel >= 1 && p.pipeline_parallel >= 1 && p.data_parallel >= 1 && p.context_parallel >= 1 &&
      gpus_used(p) > gpus_in_cluster) {
    err.add() << P << "tensor_parallel x pipeline_parallel x data_parallel x context_parallel = "
              << p.tensor_parallel << " x " << p.pipeline_parallel << " x " << p.data_parallel << " x "
              << p.context_parallel << " = " << gpus_used(p) << " GPUs exceeds the " << gpus_in_cluster
              << " GPUs of the cluster (cluster.nodes x cluster.gpus_per_node)";
  }

  err.throw_if_any();
}

}  // namespace ct::workload

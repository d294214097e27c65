#include "models/replay/step_program.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "models/collective/collective.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/schedule.h"
#include "models/workload/sharding.h"

namespace ct::replay {
namespace {

uint64_t message_key(int step, int virtual_stage, int64_t microbatch, bool forward) {
  return (static_cast<uint64_t>(step) << 48) | (static_cast<uint64_t>(virtual_stage) << 30) |
         (static_cast<uint64_t>(microbatch) << 1) | (forward ? 1U : 0U);
}

struct Builder {
  const workload::JobSpec& job;
  const std::vector<StageCosts>& costs;
  const ProgramOptions& options;
  StepProgram out;
  std::vector<int> index_of_gpu;  // global rank -> program index, -1 if not simulated
  // Per program: its receives by recv_slot (-1: none), which a send names to find its match.
  std::vector<std::vector<int32_t>> recv_index;
  struct PendingSend {
    int32_t rank, instr;
    size_t slot;  // recv_slot at the receiver
  };
  // A receive's place in its rank's table: (step, chunk, micro-batch, direction) of the virtual
  // stage vs that receives.
  // Slots of a rank's table: every (step, chunk, micro-batch, direction).
  size_t recv_slots() const {
    return static_cast<size_t>(out.steps) * static_cast<size_t>(job.parallelism.virtual_pipeline) *
           static_cast<size_t>(workload::microbatches(job)) * 2;
  }
  size_t recv_slot(int step, int vs, int64_t microbatch, bool forward) const {
    const auto& par = job.parallelism;
    const auto chunk = static_cast<size_t>(vs / par.pipeline_parallel);
    const auto m = static_cast<size_t>(workload::microbatches(job));
    return ((static_cast<size_t>(step) * static_cast<size_t>(par.virtual_pipeline) + chunk) * m +
            static_cast<size_t>(microbatch)) *
               2 +
           (forward ? 1U : 0U);
  }
  std::vector<PendingSend> sends;

  int32_t add(RankProgram& r, Instr i) {
    r.instrs.push_back(i);
    return static_cast<int32_t>(r.instrs.size() - 1);
  }

  // The data-parallel groups span DP x CP when there is context parallelism: Megatron's DDP and
  // distributed optimizer reduce and shard over the data-parallel group with context parallelism
  // (parallel_state.get_data_parallel_group(with_context_parallel=True)), torchtitan's FSDP over
  // its dp_shard x cp mesh, as the memory model shards (zero_shard_degree). Hybrid sharding with
  // CP is refused (layout.cpp), so such a group is one sharding group.
  bool cp_in_dp() const { return job.parallelism.context_parallel > 1; }
  int group_id(const Placement& at) const {
    const auto& p = job.parallelism;
    return cp_in_dp() ? at.pp * p.tensor_parallel + at.tp
                      : (at.pp * p.context_parallel + at.cp) * p.tensor_parallel + at.tp;
  }

  // ZeRO-3 / FSDP without a kept-gathered pipeline stage: every forward and backward pass
  // gathers each unit's parameters, and every backward pass reduce-scatters each unit's
  // gradients (DeepSpeed stage 3, FSDP2 reshard_after_forward=True). torchtitan with PP keeps
  // the stage gathered (reshard_after_forward = not pp_enabled): one gather per step, as ZeRO-1.
  bool per_unit() const {
    const auto& p = job.parallelism;
    if (p.zero_stage < 3) return false;
    return !(workload::stack_memory(job).unsharded_with_pp && p.pipeline_parallel > 1);
  }
  // Gradients are reduced after every micro-batch when the full gradient is not kept (ZeRO-2/3).
  bool reduce_every_microbatch() const { return job.parallelism.zero_stage >= 2 && !kept_gathered(); }
  bool kept_gathered() const { return job.parallelism.zero_stage >= 3 && !per_unit(); }
  // Groups: the sharding groups (all of DP, or shard_size consecutive DP ranks under HSDP),
  // their duplicates for per-unit reduce-scatters (their own communicator, beside the gathers),
  // then under HSDP the replica groups (one rank of each sharding group) that all-reduce the
  // reduced shards. Indices: shard(at), reduce_group(shard(at)), replica(at).
  int reduce_group(int gid) const { return gid + static_cast<int>(dp_groups); }
  int shard(const Placement& at) const { return group_id(at) * replicas + at.dp / shard_ranks; }
  int replica(const Placement& at) const {
    return replicas > 1 ? static_cast<int>(replica_base) + group_id(at) * shard_ranks + at.dp % shard_ranks
                        : -1;
  }
  size_t dp_groups = 0, replica_base = 0;
  int shard_ranks = 1, replicas = 1;
  // MoE with expert parallelism (Megatron's DDP and distributed optimizer): the experts'
  // gradients and parameters live in their own buffer, reduced and gathered over the expert
  // data-parallel group. Within a pipeline stage, with q = tp + T (cp + C dp) a rank's index
  // (TP innermost, as Megatron's dense groups), the expert ranks are q = etp + ETP (ep + EP edp)
  // (parallel_state.py's expert RankGenerator, order tp-ep-dp-pp over ETP, EP, expert DP): a
  // rank's expert data-parallel group is every q' = q mod (ETP x EP) of its stage, TP x C x D /
  // (ETP x EP) ranks. Groups expert_base + pp x (ETP x EP) + q mod (ETP x EP); none when the
  // experts share the dense groups (EP 1 and ETP = TP), the stack shards per unit (ZeRO-3 /
  // FSDP: per_unit(), which reduces whole units), or the expert group has one rank (no
  // communication: each rank holds the only copy of its experts).
  size_t expert_base = 0;
  int expert_stride = 0;       // ETP x EP; 0 = the experts reduce with the dense groups
  bool experts_alone = false;  // expert data-parallel group of one rank: nothing to reduce
  int expert_group(const Placement& at) const {
    const auto& p = job.parallelism;
    const int q = at.tp + p.tensor_parallel * (at.cp + p.context_parallel * at.dp);
    return static_cast<int>(expert_base) + at.pp * expert_stride + q % expert_stride;
  }
  bool experts_apart() const {
    const auto& p = job.parallelism;
    if (!workload::is_moe(job.model) || per_unit()) return false;
    if (p.expert_parallel <= 1 && workload::expert_tp(p) == p.tensor_parallel) return false;
    const int stride = workload::expert_tp(p) * p.expert_parallel;
    const int local = p.tensor_parallel * p.context_parallel * p.data_parallel;
    if (local % stride != 0) return false;
    return std::any_of(costs.begin(), costs.end(),
                       [](const StageCosts& c) { return c.expert_params_per_chunk > 0; });
  }
  std::vector<std::pair<int, Placement>> simulated{};  // (GPU, placement) of each simulated rank

  int phys(int rank) const {
    return options.gpu_of_rank.empty() ? rank : options.gpu_of_rank[static_cast<size_t>(rank)];
  }

  void build_groups() {
    const auto& p = job.parallelism;
    shard_ranks = p.shard_size > 0 && p.zero_stage >= 1 ? p.shard_size : p.data_parallel;
    replicas = p.data_parallel / shard_ranks;
    const int cp_locations = cp_in_dp() ? 1 : p.context_parallel;  // CP ranks in groups of their own
    const size_t locations = static_cast<size_t>(p.pipeline_parallel * cp_locations * p.tensor_parallel);
    dp_groups = locations * static_cast<size_t>(replicas);
    replica_base = dp_groups * (per_unit() ? 2 : 1);
    out.groups.resize(replica_base + (replicas > 1 ? locations * static_cast<size_t>(shard_ranks) : 0));
    auto join = [&](Group& g, int gpu) {
      g.gpus.push_back(gpu);
      if (index_of_gpu[static_cast<size_t>(gpu)] >= 0)
        g.simulated.push_back(index_of_gpu[static_cast<size_t>(gpu)]);
    };
    // A location's groups hold only its own GPUs (DP, and CP with it, varies within them): one
    // without a simulated rank (a folded program's other TP / CP ranks) has groups no
    // instruction names, left empty. Members in rank order (CP inside DP).
    std::vector<char> needed(locations, 0);
    for (const auto& [gpu, at] : simulated) needed[static_cast<size_t>(group_id(at))] = 1;
    for (int s = 0; s < p.pipeline_parallel; ++s) {
      for (int cl = 0; cl < cp_locations; ++cl) {
        for (int t = 0; t < p.tensor_parallel; ++t) {
          if (needed[static_cast<size_t>(group_id(Placement{t, cl, 0, s}))] == 0) continue;
          for (int d = 0; d < p.data_parallel; ++d) {
            for (int c = cp_in_dp() ? 0 : cl; c < (cp_in_dp() ? p.context_parallel : cl + 1); ++c) {
              const Placement at{t, c, d, s};
              const int gpu = phys(global_rank(p, at, options.placement));
              join(out.groups[static_cast<size_t>(shard(at))], gpu);
              if (replicas > 1) join(out.groups[static_cast<size_t>(replica(at))], gpu);
            }
          }
        }
      }
    }
    if (experts_apart()) build_expert_groups(join);
    for (Group& g : out.groups) {
      if (!g.gpus.empty()) g.hash = collective::group_hash(g.gpus);
    }
    for (size_t g = dp_groups; g < replica_base; ++g) out.groups[g] = out.groups[g - dp_groups];
  }

  // The expert data-parallel groups (expert_group) of the stages' simulated ranks, members in
  // q order.
  template <typename Join>
  void build_expert_groups(Join& join) {
    const auto& p = job.parallelism;
    expert_stride = workload::expert_tp(p) * p.expert_parallel;
    const int local = p.tensor_parallel * p.context_parallel * p.data_parallel;
    experts_alone = local == expert_stride;
    if (experts_alone) return;
    expert_base = out.groups.size();
    out.groups.resize(expert_base +
                      static_cast<size_t>(p.pipeline_parallel) * static_cast<size_t>(expert_stride));
    std::vector<char> needed(out.groups.size() - expert_base, 0);
    for (const auto& [gpu, at] : simulated) needed[static_cast<size_t>(expert_group(at)) - expert_base] = 1;
    for (int s = 0; s < p.pipeline_parallel; ++s) {
      for (int q = 0; q < local; ++q) {
        const Placement at{q % p.tensor_parallel, (q / p.tensor_parallel) % p.context_parallel,
                           q / (p.tensor_parallel * p.context_parallel), s};
        const auto g = static_cast<size_t>(expert_group(at));
        if (needed[g - expert_base] != 0) join(out.groups[g], phys(global_rank(p, at, options.placement)));
      }
    }
  }

  // What one rank's program build carries from pass to pass.
  struct RankState {
    int32_t self = 0;
    Placement at;
    RankProgram* r = nullptr;
    const StageCosts* sc = nullptr;
    int gid = 0;    // its sharding group
    int egid = -1;  // its expert data-parallel group (expert_group); -1: none (see below)
    int64_t activation_bytes = 0, grad_bytes = 0, param_bytes = 0;
    // Of grad_bytes and param_bytes, the experts' when they are apart from the dense ones
    // (experts_apart): over egid, or with egid -1 (one copy of each expert) not at all; both 0
    // when the experts reduce with the dense gradients over gid.
    int64_t expert_grad_bytes = 0, expert_param_bytes = 0;
    bool units = false;  // per-unit ZeRO-3 / FSDP gathers and reductions (per_unit())
    workload::Zero3Plan zplan;
    std::vector<workload::PipelinePass> order;         // the pipeline schedule of one step
    std::vector<size_t> last_backward, first_forward;  // per chunk: its index in `order`
    std::vector<int32_t> gather_prev;  // per chunk: the parameter gather its first forward waits for
    int32_t prev_opt = -1;             // the previous step's optimizer
    // Within step k:
    int k = 0;
    int32_t last_compute = -1, last_dp = -1;
    // A pass whose next virtual stage runs on this same rank (pipeline_parallel 1 with
    // virtual stages) hands its output over in memory: no send/receive, the consumer depends
    // on the producing compute directly. message key -> that compute.
    std::unordered_map<uint64_t, int32_t> local_output;
    std::vector<int> stage_gpu;  // peer_gpu's table: the GPU of this placement on each stage, or -1
    int16_t step() const { return static_cast<int16_t>(k); }
  };

  // The GPU of this rank's placement on pipeline stage `stage` (its sends' and receives' peer):
  // from the rank's table, filled once per stage it reaches.
  int peer_gpu(RankState& rs, int stage) const {
    int& gpu = rs.stage_gpu[static_cast<size_t>(stage)];
    if (gpu < 0) {
      Placement at = rs.at;
      at.pp = stage;
      gpu = phys(global_rank(job.parallelism, at, options.placement));
    }
    return gpu;
  }

  void build_rank(int32_t self, const Placement& at) {
    const auto& par = job.parallelism;
    const int p = par.pipeline_parallel, v = par.virtual_pipeline;
    RankState rs;
    rs.self = self;
    rs.at = at;
    rs.r = &out.ranks[static_cast<size_t>(self)];
    rs.sc = &costs[static_cast<size_t>(at.pp)];
    rs.gid = shard(at);
    rs.activation_bytes = job.micro_batch_size * job.model.seq_length / par.context_parallel *
                          job.model.hidden * 2 / par.tensor_parallel;
    const workload::StackMemory st = workload::stack_memory(job);
    rs.grad_bytes = static_cast<int64_t>(rs.sc->params_per_chunk * st.grad_bytes);
    rs.param_bytes = static_cast<int64_t>(rs.sc->params_per_chunk * rs.sc->gather_bytes_per_param);
    if (expert_stride > 0 && rs.sc->expert_params_per_chunk > 0) {
      rs.egid = experts_alone ? -1 : expert_group(at);
      rs.expert_grad_bytes = static_cast<int64_t>(rs.sc->expert_params_per_chunk * st.grad_bytes);
      rs.expert_param_bytes =
          static_cast<int64_t>(rs.sc->expert_params_per_chunk * rs.sc->gather_bytes_per_param);
    }
    rs.units = per_unit();
    if (rs.units) rs.zplan = workload::zero3_plan(job);
    rs.order = workload::pipeline_schedule(at.pp, p, v, workload::microbatches(job), par.microbatch_group);
    rs.stage_gpu.assign(static_cast<size_t>(p), -1);
    // Every pass adds its compute and at most a receive and a send, and each step ends with
    // its gradient reductions: room for those at once (growing the list copied it each time).
    rs.r->instrs.reserve(static_cast<size_t>(out.steps) * (3 * rs.order.size() + 8));
    rs.last_backward.assign(static_cast<size_t>(v), 0);
    rs.first_forward.assign(static_cast<size_t>(v), rs.order.size());
    for (size_t i = 0; i < rs.order.size(); ++i) {
      const auto c = static_cast<size_t>(rs.order[i].chunk);
      if (!rs.order[i].forward) rs.last_backward[c] = i;
      if (rs.order[i].forward && rs.first_forward[c] == rs.order.size()) rs.first_forward[c] = i;
    }
    rs.gather_prev.assign(static_cast<size_t>(v), -1);
    for (int k = 0; k < out.steps; ++k) {
      rs.k = k;
      rs.last_compute = rs.last_dp = -1;
      for (size_t i = 0; i < rs.order.size(); ++i) add_pass(rs, i);
      add_step_end(rs);
      // Every step adds as many as the first (the same schedule): room for the rest at once,
      // where passes split into gradient buckets outgrow the estimate above.
      if (k == 0) rs.r->instrs.reserve(rs.r->instrs.size() * static_cast<size_t>(out.steps));
    }
  }

  // One forward or backward pass of the schedule: its receive, its compute (with the
  // gradient reductions and ZeRO-3 gathers it drives), its send.
  void add_pass(RankState& rs, size_t i) {
    const int p = job.parallelism.pipeline_parallel, v = job.parallelism.virtual_pipeline;
    const workload::PipelinePass& pass = rs.order[i];
    const int vs = pass.chunk * p + rs.at.pp;
    const bool first_vs = vs == 0, last_vs = vs == p * v - 1;
    const auto chunk = static_cast<size_t>(pass.chunk);
    const bool needs_input = pass.forward ? !first_vs : !last_vs;
    const int32_t recv_at = needs_input ? add_recv(rs, pass, vs) : -1;
    Instr run;
    run.kind = InstrKind::compute;
    run.category = pass.forward ? Category::forward : Category::backward;
    run.step = rs.step();
    run.chunk = static_cast<int16_t>(pass.chunk);
    run.microbatch = pass.microbatch;
    const BlockCost& cost = pass.forward ? rs.sc->forward[chunk] : rs.sc->backward[chunk];
    run.seconds = cost.total_s();
    run.tp_seconds = cost.tp_comm_s;
    run.after = recv_at;
    if (pass.forward && i == rs.first_forward[chunk]) run.after2 = rs.gather_prev[chunk];
    const int32_t run_at = rs.units ? add_unit_pass(rs, pass, run, recv_at) : add_bucketed_pass(rs, i, run);
    rs.last_compute = run_at;
    const bool has_output = pass.forward ? !last_vs : !first_vs;
    if (has_output) add_send(rs, pass, vs, run_at);
  }

  int32_t add_recv(RankState& rs, const workload::PipelinePass& pass, int vs) {
    const int p = job.parallelism.pipeline_parallel;
    Instr recv;
    recv.kind = InstrKind::recv;
    recv.stream = Stream::none;
    recv.category = Category::pp;
    recv.step = rs.step();
    recv.chunk = static_cast<int16_t>(pass.chunk);
    recv.microbatch = pass.microbatch;
    const int from_stage = pass.forward ? (rs.at.pp - 1 + p) % p : (rs.at.pp + 1) % p;
    recv.peer = index_of_gpu[static_cast<size_t>(peer_gpu(rs, from_stage))];
    if (recv.peer == rs.self) {
      const auto local = rs.local_output.find(message_key(rs.k, vs, pass.microbatch, pass.forward));
      if (local == rs.local_output.end())
        throw std::logic_error("step program: a local hand-over before its producer");
      return local->second;
    }
    const int32_t recv_at = add(*rs.r, recv);
    std::vector<int32_t>& slots = recv_index[static_cast<size_t>(rs.self)];
    if (slots.empty()) slots.assign(recv_slots(), -1);
    slots[recv_slot(rs.k, vs, pass.microbatch, pass.forward)] = recv_at;
    return recv_at;
  }

  void add_send(RankState& rs, const workload::PipelinePass& pass, int vs, int32_t run_at) {
    const int p = job.parallelism.pipeline_parallel;
    Instr send;
    send.kind = InstrKind::send;
    send.stream = options.overlap_p2p ? Stream::p2p : Stream::compute;
    send.category = Category::pp;
    send.step = rs.step();
    send.chunk = static_cast<int16_t>(pass.chunk);
    send.microbatch = pass.microbatch;
    send.bytes = rs.activation_bytes;
    send.after = run_at;
    const int to_stage = pass.forward ? (rs.at.pp + 1) % p : (rs.at.pp - 1 + p) % p;
    send.peer = index_of_gpu[static_cast<size_t>(peer_gpu(rs, to_stage))];
    const int to_vs = pass.forward ? vs + 1 : vs - 1;
    if (send.peer == rs.self) {
      rs.local_output[message_key(rs.k, to_vs, pass.microbatch, pass.forward)] = run_at;
      return;
    }
    const int32_t send_at = add(*rs.r, send);
    sends.push_back({rs.self, send_at, recv_slot(rs.k, to_vs, pass.microbatch, pass.forward)});
  }

  // Per layer (the FSDP unit), per module of the stack's plan (sharding.h): the module's
  // gathers on the dp stream, then its share of the layer's compute; in backward its
  // gradients reduce-scatter on a second stream and communicator. Without device sync a
  // gather is issued when the compute `prefetch` modules before its own has started (i.e.
  // the one before that is done); with device sync it waits for every earlier compute piece
  // and reduction (DeepSpeed 2021). Returns the pass's last compute piece.
  int32_t add_unit_pass(RankState& rs, const workload::PipelinePass& pass, const Instr& run,
                        int32_t recv_at) {
    const workload::Zero3Plan& zplan = rs.zplan;
    const int64_t n_layers = std::max<int64_t>(1, workload::layers_in_chunk(job, rs.at.pp, pass.chunk));
    const double layer_params = rs.sc->params_per_chunk / static_cast<double>(n_layers);
    const int64_t recomputed =
        workload::parse_recompute(job.recompute_granularity) == workload::Recompute::full
            ? workload::recomputed_layers_in_chunk(job, rs.at.pp, pass.chunk)
            : 0;
    std::vector<int32_t> piece_at;
    int32_t run_at = -1;
    double waiting_grads = 0.0;
    // List-API collectives (sharding.h): one eager copy per rank of the group, issued by the
    // training thread, so they hold the compute stream (nothing else gets launched meanwhile).
    const double ranks = static_cast<double>(out.groups[static_cast<size_t>(rs.gid)].gpus.size());
    auto host_copies = [&](double seconds, int32_t after, int32_t after2) {
      Instr c;
      c.kind = InstrKind::compute;
      c.stream = Stream::compute;
      c.category = Category::dp;
      c.step = rs.step();
      c.chunk = static_cast<int16_t>(pass.chunk);
      c.microbatch = pass.microbatch;
      c.seconds = seconds;
      c.after = after;
      c.after2 = after2;
      return add(*rs.r, c);
    };
    // Each rank's slice of `bytes` read and written once: ranks copies of 2 bytes / ranks each.
    auto slice_copies_s = [&](double bytes) { return ranks * rs.sc->copy_s(2.0 * bytes / ranks); };
    // FSDP's own copies around its collectives (sharding.h), in the compute stream.
    const bool fsdp_copies = ranks > 1 && !zplan.list_api;
    auto reduce = [&](double params, int32_t after) {
      const auto bytes = static_cast<int64_t>(params * zplan.reduce_bytes);
      if (zplan.list_api) after = host_copies(slice_copies_s(static_cast<double>(bytes)), after, -1);
      if (fsdp_copies && zplan.reduce_prep_bytes > 0)
        after = host_copies(rs.sc->copy_s(params * zplan.reduce_prep_bytes), after, -1);
      Instr red = reduction(rs.step(), pass.chunk, reduce_group(rs.gid), bytes, after);
      red.stream = collective_stream(1);
      red.collective = CollectiveKind::reduce_scatter;
      rs.last_dp = reduce_grads(*rs.r, red, rs.at);
    };
    for (int64_t j = 0; j < n_layers; ++j) {
      for (const auto& module : zplan.modules) {
        int32_t gather_at = -1, last_host = -1;
        const auto pieces = static_cast<int64_t>(piece_at.size());
        // The module's gathers, and in backward of a recomputed layer (the chunk's first ones)
        // its re-gathers (sharding.h), without copying either list.
        const bool regather = !pass.forward && j < recomputed;
        const size_t own = module.gather_fractions.size();
        const size_t total = own + (regather ? module.recompute_gather_fractions.size() : 0);
        for (size_t k = 0; k < total; ++k) {
          const double share =
              k < own ? module.gather_fractions[k] : module.recompute_gather_fractions[k - own];
          Instr g = param_gather(rs.step(), run.chunk, rs.gid,
                                 static_cast<int64_t>(layer_params * share * rs.sc->gather_bytes_per_param));
          g.microbatch = pass.microbatch;
          if (zplan.device_sync) {
            g.after = last_host >= 0         ? last_host
                      : pieces > 0           ? piece_at.back()
                      : rs.last_compute >= 0 ? rs.last_compute
                                             : rs.prev_opt;
            g.after2 = rs.last_dp;
          } else {
            // The first gathers of a step wait for the previous step's optimizer (new weights).
            const int64_t behind = pieces - 1 - zplan.prefetch;
            g.after = behind >= 0 ? piece_at[static_cast<size_t>(behind)] : (pieces == 0 ? rs.prev_opt : -1);
          }
          if (zplan.list_api) {
            // torch.zeros of the gathered buffer on the compute stream, then the gather; the
            // thread copies the ranks' slices out while it runs.
            const auto full = static_cast<double>(g.bytes);
            g.after = host_copies(rs.sc->copy_s(full), g.after, g.after2);
            g.after2 = -1;
            gather_at = add(*rs.r, g);
            last_host = host_copies(slice_copies_s(full), g.after, -1);
          } else {
            gather_at = add(*rs.r, g);
            if (fsdp_copies && zplan.gather_copy_per_byte > 0) {  // the copy-out waits for it
              gather_at = host_copies(
                  rs.sc->copy_s(zplan.gather_copy_per_byte * static_cast<double>(g.bytes)), -1, gather_at);
            }
          }
        }
        Instr piece = run;
        const double share = module.compute_fraction / static_cast<double>(n_layers);
        piece.seconds = run.seconds * share;
        piece.tp_seconds = run.tp_seconds * share;
        piece.after = piece_at.empty() ? recv_at : -1;
        piece.after2 = gather_at;
        run_at = add(*rs.r, piece);
        piece_at.push_back(run_at);
        if (pass.forward) continue;
        double module_params = 0.0;
        for (const double g : module.gather_fractions) {
          if (zplan.reduce_per_gather) {
            reduce(layer_params * g, run_at);
          } else {
            module_params += layer_params * g;
          }
        }
        waiting_grads += module_params;
        const bool layer_done = &module == &zplan.modules.back();
        const bool flush =
            zplan.reduce_bucket_params > 0 ? waiting_grads >= zplan.reduce_bucket_params : layer_done;
        if (waiting_grads > 0 && (flush || (layer_done && j == n_layers - 1))) {
          reduce(waiting_grads, run_at);
          waiting_grads = 0.0;
        }
      }
    }
    return run_at;
  }

  // The last backward of a chunk produces its gradients bucket by bucket (last layers
  // first): split it so that each bucket's reduction starts when the bucket is ready.
  // Without the full gradient kept (ZeRO-2) every backward pass reduces its buckets.
  // Returns the pass's last compute piece.
  int32_t add_bucketed_pass(RankState& rs, size_t i, const Instr& run) {
    const workload::PipelinePass& pass = rs.order[i];
    const auto chunk = static_cast<size_t>(pass.chunk);
    const bool reduces = !pass.forward && (i == rs.last_backward[chunk] || reduce_every_microbatch());
    const bool bucketed = reduces && options.overlap_grad_reduce;
    // The dense buffer's buckets and (own group) the experts', each bucket_count of its
    // parameters, spread evenly over the pass's pieces.
    const double expert_params = rs.expert_grad_bytes > 0 ? rs.sc->expert_params_per_chunk : 0.0;
    const int64_t dense_buckets = bucketed ? bucket_count(rs.sc->params_per_chunk - expert_params) : 1;
    const int64_t expert_buckets = bucketed && rs.egid >= 0 ? bucket_count(expert_params) : 0;
    const int64_t pieces = std::max(dense_buckets, expert_buckets);
    const int64_t dense_bytes = rs.grad_bytes - rs.expert_grad_bytes;
    int32_t run_at = -1;
    for (int64_t j = 0; j < pieces; ++j) {
      Instr piece = run;
      piece.seconds = run.seconds / static_cast<double>(pieces);
      piece.tp_seconds = run.tp_seconds / static_cast<double>(pieces);
      if (j > 0) piece.after = piece.after2 = -1;
      run_at = add(*rs.r, piece);
      if (!bucketed) continue;
      // Bucket b of n is reduced in the piece where it is complete: j = floor((b + 1) pieces / n) - 1.
      auto reduce_buckets = [&](int64_t n, int64_t total, int group) {
        for (int64_t b = j * n / pieces; b < (j + 1) * n / pieces; ++b) {
          const int64_t bytes = total / n + (b < total % n ? 1 : 0);
          Instr red = reduction(rs.step(), pass.chunk, group, bytes, run_at);
          rs.last_dp = group == rs.gid ? reduce_grads(*rs.r, red, rs.at) : add(*rs.r, red);
        }
      };
      reduce_buckets(dense_buckets, dense_bytes, rs.gid);
      if (expert_buckets > 0) reduce_buckets(expert_buckets, rs.expert_grad_bytes, rs.egid);
    }
    if (reduces && !bucketed && reduce_every_microbatch()) reduce_whole_chunk(rs, pass.chunk, run_at);
    return run_at;
  }

  // A chunk's whole gradient reduced at once: the dense part over its sharding group, then
  // the experts' over theirs.
  void reduce_whole_chunk(RankState& rs, int chunk, int32_t after) {
    rs.last_dp = reduce_grads(
        *rs.r, reduction(rs.step(), chunk, rs.gid, rs.grad_bytes - rs.expert_grad_bytes, after), rs.at);
    if (rs.egid >= 0)
      rs.last_dp = add(*rs.r, reduction(rs.step(), chunk, rs.egid, rs.expert_grad_bytes, after));
  }

  // The end of a step: gradient reductions left for it, the optimizer, the ZeRO parameter
  // gathers of the new weights, and the step's end marker.
  void add_step_end(RankState& rs) {
    const int v = job.parallelism.virtual_pipeline;
    const bool zero = job.parallelism.zero_stage >= 1;
    if (!options.overlap_grad_reduce && !rs.units && !reduce_every_microbatch()) {
      for (int c = 0; c < v; ++c) reduce_whole_chunk(rs, c, rs.last_compute);
    }
    Instr opt;
    opt.kind = InstrKind::compute;
    opt.category = Category::optimizer;
    opt.step = rs.step();
    opt.seconds = rs.sc->optimizer_s;
    opt.after = rs.last_dp >= 0 ? rs.last_dp : rs.last_compute;
    const int32_t opt_at = add(*rs.r, opt);
    rs.prev_opt = opt_at;
    int32_t last_gather = -1;
    for (int c = 0; c < v && zero && !rs.units; ++c) {
      Instr g =
          param_gather(rs.step(), static_cast<int16_t>(c), rs.gid, rs.param_bytes - rs.expert_param_bytes);
      g.after = opt_at;
      last_gather = add(*rs.r, g);
      if (rs.egid >= 0 && rs.expert_param_bytes > 0) {  // then the experts' over their group, same stream
        Instr e = param_gather(rs.step(), static_cast<int16_t>(c), rs.egid, rs.expert_param_bytes);
        e.after = opt_at;
        last_gather = add(*rs.r, e);
      }
      rs.gather_prev[static_cast<size_t>(c)] = options.overlap_param_gather ? last_gather : -1;
    }
    Instr end;
    end.kind = InstrKind::compute;
    end.category = Category::step_end;
    end.step = rs.step();
    end.after = opt_at;
    if (!options.overlap_param_gather) end.after2 = last_gather;
    add(*rs.r, end);
  }

  // Megatron's DDP buckets: max(40M, 1M x DP) parameters each, unless given.
  int64_t bucket_count(double params) const {
    const double bucket = options.bucket_params > 0 ? options.bucket_params
                                                    : std::max(40e6, 1e6 * job.parallelism.data_parallel);
    return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(params / bucket)));
  }

  // A gradient reduction over the sharding group, then under HSDP the all-reduce of the
  // reduced shard (bytes / shard_ranks) across the replicas, in order on the same stream.
  int32_t reduce_grads(RankProgram& r, Instr rs, const Placement& at) {
    int32_t last = add(r, rs);
    if (replicas > 1) {
      Instr ar = rs;
      ar.collective = CollectiveKind::all_reduce;
      ar.group = replica(at);
      ar.bytes = rs.bytes / shard_ranks;
      ar.after = last;
      last = add(r, ar);
    }
    return last;
  }

  // A bf16 parameter all-gather over the sharding group, on the dp stream.
  static Instr param_gather(int16_t step, int16_t chunk, int gid, int64_t bytes) {
    Instr g;
    g.kind = InstrKind::collective;
    g.stream = Stream::dp;
    g.category = Category::dp;
    g.collective = CollectiveKind::all_gather;
    g.group = gid;
    g.step = step;
    g.chunk = chunk;
    g.bytes = bytes;
    return g;
  }

  Instr reduction(int16_t step, int chunk, int gid, int64_t bytes, int32_t after) const {
    Instr d;
    d.kind = InstrKind::collective;
    d.stream = Stream::dp;
    d.category = Category::dp;
    d.collective =
        job.parallelism.zero_stage >= 1 ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
    d.group = gid;
    d.step = step;
    d.chunk = static_cast<int16_t>(chunk);
    d.bytes = bytes;
    d.after = after;
    return d;
  }

  void match_sends() {
    for (const auto& s : sends) {
      Instr& send = out.ranks[static_cast<size_t>(s.rank)].instrs[static_cast<size_t>(s.instr)];
      const auto& slots = recv_index[static_cast<size_t>(send.peer)];
      const int32_t recv = s.slot < slots.size() ? slots[s.slot] : -1;
      if (recv < 0) throw std::logic_error("step program: a send has no matching receive");
      send.peer_instr = recv;
    }
  }
};

}  // namespace

size_t StepProgram::instruction_count() const {
  size_t n = 0;
  for (const auto& r : ranks) n += r.instrs.size();
  return n;
}

int global_rank(const workload::ParallelSpec& p, const Placement& at, const std::string& order) {
  if (order == "tp-cp-pp-dp") {
    return at.tp + p.tensor_parallel * (at.cp + p.context_parallel * (at.pp + p.pipeline_parallel * at.dp));
  }
  return at.tp + p.tensor_parallel * (at.cp + p.context_parallel * (at.dp + p.data_parallel * at.pp));
}

Placement placement_of(const workload::ParallelSpec& p, int rank, const std::string& order) {
  Placement at;
  at.tp = rank % p.tensor_parallel;
  rank /= p.tensor_parallel;
  at.cp = rank % p.context_parallel;
  rank /= p.context_parallel;
  if (order == "tp-cp-pp-dp") {
    at.pp = rank % p.pipeline_parallel;
    at.dp = rank / p.pipeline_parallel;
  } else {
    at.dp = rank % p.data_parallel;
    at.pp = rank / p.data_parallel;
  }
  return at;
}

int simulated_steps(const ProgramOptions& options) {
  return options.fold ? std::min(options.steps, kFoldedSteps) : options.steps;
}

bool folds_rails(const workload::ParallelSpec& p, const ProgramOptions& options) {
  return options.fold_rails && !options.fold && p.tensor_parallel > 1 && options.gpu_of_rank.empty();
}

StepProgram build_step_program(const workload::JobSpec& job, const std::vector<StageCosts>& costs,
                               const ProgramOptions& options) {
  const auto& p = job.parallelism;
  const bool rails = folds_rails(p, options);
  Builder b{job, costs, options, {}, {}, {}, {}};
  const auto world = static_cast<int>(workload::gpus_used(p));
  b.out.steps = simulated_steps(options);
  b.out.folded = options.fold || rails;
  b.out.rail_fold = rails ? p.tensor_parallel : 1;
  b.index_of_gpu.assign(static_cast<size_t>(world), -1);
  auto& simulated = b.simulated;
  if (!options.gpu_of_rank.empty() && options.gpu_of_rank.size() != static_cast<size_t>(world)) {
    throw std::invalid_argument("step program: gpu_of_rank has " +
                                std::to_string(options.gpu_of_rank.size()) + " entries for " +
                                std::to_string(world) + " ranks");
  }
  // Folded: the ranks at TP, CP and DP index 0, one per stage, in rank order (either placement
  // order puts the stage above them).
  // Rail-folded: every rank at TP index 0, in rank order.
  std::vector<int> ranks;
  if (options.fold) {
    for (int s = 0; s < p.pipeline_parallel; ++s)
      ranks.push_back(global_rank(p, Placement{0, 0, 0, s}, options.placement));
  } else if (rails) {
    for (int r = 0; r < world; r += p.tensor_parallel) ranks.push_back(r);  // TP innermost: tp(r) = r mod T
  }
  const bool subset = options.fold || rails;
  const int count = subset ? static_cast<int>(ranks.size()) : world;
  for (int k = 0; k < count; ++k) {
    const int rank = subset ? ranks[static_cast<size_t>(k)] : k;
    const Placement at = placement_of(p, rank, options.placement);
    const int gpu = b.phys(rank);
    if (gpu < 0 || gpu >= world || b.index_of_gpu[static_cast<size_t>(gpu)] >= 0) {
      throw std::invalid_argument("step program: gpu_of_rank is not a permutation of the " +
                                  std::to_string(world) + " ranks");
    }
    b.index_of_gpu[static_cast<size_t>(gpu)] = static_cast<int>(simulated.size());
    simulated.emplace_back(gpu, at);
  }
  b.out.ranks.resize(simulated.size());
  b.recv_index.resize(simulated.size());
  for (size_t i = 0; i < simulated.size(); ++i) {
    b.out.ranks[i].gpu = simulated[i].first;
    b.out.ranks[i].stage = simulated[i].second.pp;
  }
  b.build_groups();
  if (rails) {
    // A group with members outside the simulated rail (an MoE expert group across TP indices)
    // would put unsimulated GPUs' legs on the network: no rail fold then.
    for (const Group& g : b.out.groups) {
      if (!g.simulated.empty() && g.simulated.size() != g.gpus.size()) {
        ProgramOptions whole = options;
        whole.fold_rails = false;
        return build_step_program(job, costs, whole);
      }
    }
  }
  for (size_t i = 0; i < simulated.size(); ++i) b.build_rank(static_cast<int32_t>(i), simulated[i].second);
  b.match_sends();
  return std::move(b.out);
}

double estimate_program_instructions(const workload::JobSpec& job, const ProgramOptions& options) {
  const auto& p = job.parallelism;
  const double gpus = static_cast<double>(workload::gpus_used(p));
  const double ranks = options.fold              ? p.pipeline_parallel
                       : folds_rails(p, options) ? gpus / p.tensor_parallel
                                                 : gpus;
  const double passes = 2.0 * static_cast<double>(workload::microbatches(job)) * p.virtual_pipeline;
  // ZeRO-3 per unit: per layer and module a piece, its gathers and (backward) reduce-scatters.
  double per_pass = 3.0;
  if (p.zero_stage >= 3) {
    double per_layer = 0.0;
    for (const auto& module : workload::zero3_plan(job).modules)
      per_layer += 1.0 + 2.0 * static_cast<double>(module.gather_fractions.size());
    per_pass = per_layer * static_cast<double>(workload::layers_per_chunk(job)) + 3.0;
  }
  const double per_step = passes * per_pass + 3.0 * p.virtual_pipeline + 3.0;
  return ranks * per_step * simulated_steps(options);
}

double estimate_program_bytes(const workload::JobSpec& job, const ProgramOptions& options) {
  // instruction + executor state + receive index entry
  return estimate_program_instructions(job, options) * (static_cast<double>(sizeof(Instr)) + 48.0);
}

}  // namespace ct::replay

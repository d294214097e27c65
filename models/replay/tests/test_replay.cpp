#include <gtest/gtest.h>

#include <map>

#include "models/collective/nccl_tuning.h"
#include "models/replay/block_costs.h"
#include "models/replay/tests/fixtures.h"
#include "models/workload/flops.h"
#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/pipeline.h"

using namespace ct;
using namespace ct::replay;
using namespace ct::replay::testing;

namespace {

// A 4-layer MoE (16 experts, top 2) on 16 single-GPU DP ranks, without recompute.
workload::JobSpec small_moe_job() {
  auto job = small_job(1, 1, 16, 1, 16);
  job.model.activation = "swiglu";
  job.model.moe.experts = 16;
  job.model.moe.top_k = 2;
  job.model.layers = 4;
  job.recompute_granularity = "none";
  return job;
}

StepResult run(const workload::JobSpec& job, int nodes, const std::string& mode, bool fold, int steps = 3) {
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(nodes);
  in.network_mode = mode;
  in.program.fold = fold;
  in.program.steps = steps;
  return simulate_step(in);
}

}  // namespace

// Pipeline bubble: with DP = 1 the only idle time of a 1F1B pipeline is the fill and drain,
// (p - 1) (t_f + t_b) per step, i.e. (p-1)/m of the ideal time (Narayanan et al. 2021).
TEST(Replay, PipelineBubbleMatchesClosedForm) {
  for (const int v : {1, 2}) {
    const int p = 4;
    const int64_t m = 16;
    // TP 2 x PP 4 in one node: p2p over NVLink, small against the blocks.
    auto job = small_job(2, p, 1, v, m);
    job.model.vocab = 512;  // balanced stages: the closed form assumes equal stage times
    const StepResult r = run(job, 1, "analytical", false);
    const double expected = workload::bubble_fraction(p, m, v);
    const double busy = r.breakdown.compute_s + r.breakdown.exposed_tp_comm_s;
    const double measured = (r.breakdown.bubble_s + r.breakdown.exposed_pp_comm_s) / busy;
    // The embedding and a small output layer still unbalance the end stages a little, and
    // p2p transfers add a little: within 10% of the closed form for 1F1B. Megatron's
    // interleaved schedule (its warmup depth, with t_b ~ 2 t_f) sits up to 15% above the
    // idealised (p-1)/(v m), which assumes the chunks' passes tile perfectly.
    EXPECT_NEAR(measured, expected, (v == 1 ? 0.10 : 0.15) * expected) << "v = " << v;
    EXPECT_NEAR(r.breakdown.total(), r.step_time_s, 1e-6 * r.step_time_s);
  }
}

// Folding one DP replica and one TP rank per stage must not change the answer where the
// ranks are provably identical (analytical network: no contention between replicas).
TEST(Replay, FoldedAndUnfoldedRunsAgree) {
  const auto job = small_job(4, 2, 4, 1, 32);
  const StepResult full = run(job, 4, "analytical", false);
  const StepResult folded = run(job, 4, "analytical", true);
  EXPECT_EQ(full.simulated_ranks, 32u);
  EXPECT_EQ(folded.simulated_ranks, 2u);
  // The fold simulates two of the three steps (kFoldedSteps): the third repeats the second.
  EXPECT_EQ(run(job, 4, "analytical", true, 5).events, folded.events);
  EXPECT_NEAR(folded.step_time_s, full.step_time_s, 1e-9 * full.step_time_s);
  EXPECT_NEAR(folded.mfu, full.mfu, 1e-9);
  EXPECT_NEAR(folded.breakdown.bubble_s, full.breakdown.bubble_s, 1e-9 * full.step_time_s);
  EXPECT_NEAR(folded.breakdown.exposed_dp_comm_s, full.breakdown.exposed_dp_comm_s, 1e-9 * full.step_time_s);
  // Power: a folded rank stands for its whole class, so the cluster draw is the same over the
  // same window (the series is bucketed on absolute time: the full run's second step).
  const StepResult full2 = run(job, 4, "analytical", false, 2);
  EXPECT_NEAR(folded.power_mean_w, full2.power_mean_w, 1e-6 * full2.power_mean_w);
  EXPECT_NEAR(folded.power_peak_w, full2.power_peak_w, 1e-6 * full2.power_peak_w);
  // One step is the cold one, not folded away.
  EXPECT_NE(run(job, 4, "analytical", true, 1).step_time_s, folded.step_time_s);
}

TEST(Replay, PowerStaysBetweenIdleAndFullDraw) {
  const auto job = small_job(8, 2, 2, 1, 16);
  const StepResult r = run(job, 4, "analytical", false);
  const auto gpu = hardware::gpu("H100-SXM");
  const hardware::PowerModel m;
  EXPECT_GT(r.power_peak_w, r.power_min_w);
  EXPECT_GE(r.power_mean_w, r.power_min_w);
  EXPECT_LE(r.power_mean_w, r.power_peak_w);
  // 32 GPUs: the swing between all idle and all computing is at most 32 x (TDP - idle).
  EXPECT_LE(r.power_peak_w - r.power_min_w, 32 * gpu.tdp_watts * (1 - m.idle_fraction) * (1 + 1e-9));
  EXPECT_GE(r.power_min_w, 32 * gpu.tdp_watts * (m.idle_fraction + m.host_per_gpu_fraction));
}

TEST(Replay, FlowModeIsDeterministicAndNotFasterThanAnalytical) {
  const auto job = small_job(8, 2, 4, 1, 32);
  const StepResult a = run(job, 8, "flow", false);
  const StepResult b = run(job, 8, "flow", false);
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.events, b.events);
  const StepResult analytical = run(job, 8, "analytical", false);
  EXPECT_GE(a.step_time_s, analytical.step_time_s * 0.999);
  EXPECT_GT(a.mfu, 0.1);
  EXPECT_LT(a.mfu, 0.8);
}

TEST(Replay, ThrottledGpuSlowsTheWholeStep) {
  auto job = small_job(8, 2, 2, 1, 32);
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(4);
  in.network_mode = "analytical";
  const StepResult nominal = simulate_step(in);
  in.gpu_speed = {{3, 0.8}};
  const StepResult slow = simulate_step(in);
  EXPECT_GT(slow.step_time_s, nominal.step_time_s * 1.1);
  size_t slowest = 0;
  for (size_t r = 0; r < slow.rank_compute_s.size(); ++r) {
    if (slow.rank_compute_s[r] > slow.rank_compute_s[slowest]) slowest = r;
  }
  EXPECT_EQ(slow.rank_gpu[slowest], 3);
}

TEST(Replay, DataParallelCommunicationIsExposedWithoutOverlap) {
  auto job = small_job(8, 1, 4, 1, 16);
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(4);
  in.network_mode = "flow";
  in.program.overlap_grad_reduce = false;
  const StepResult exposed = simulate_step(in);
  in.program.overlap_grad_reduce = true;
  const StepResult overlapped = simulate_step(in);
  EXPECT_GT(exposed.breakdown.exposed_dp_comm_s, 0.0);
  EXPECT_LT(overlapped.step_time_s, exposed.step_time_s);
  EXPECT_FALSE(exposed.collectives.empty());
}

namespace {

size_t count(const StepProgram& prog, CollectiveKind kind, int step) {
  size_t n = 0;
  for (const Instr& i : prog.ranks.front().instrs) {
    if (i.kind == InstrKind::collective && i.collective == kind && i.step == step) ++n;
  }
  return n;
}

// Four nodes of the small cluster, analytical, folded, two steps.
StepInput step_input_of(const workload::JobSpec& job) {
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(4);
  in.network_mode = "analytical";
  in.program.fold = true;
  in.program.steps = 2;
  return in;
}

StepProgram program_of(const workload::JobSpec& job) { return build_program(step_input_of(job)); }

}  // namespace

// ZeRO-3 / FSDP2: every layer gathers its parameters before each forward and each backward of
// every micro-batch, and reduce-scatters its gradients after each backward; ZeRO-1 gathers
// once per step and reduces after the last micro-batch; ZeRO-2 reduces after every one.
TEST(Replay, ZeroStagesCommunicateAsTheyShard) {
  auto job = small_job(1, 1, 32, 1, 128);  // 16 layers, 4 micro-batches of 1 per replica
  job.stack = "torchtitan";
  job.parallelism.zero_stage = 3;
  const StepProgram z3 = program_of(job);
  EXPECT_EQ(count(z3, CollectiveKind::all_gather, 1), 16u * 2 * 4);
  EXPECT_EQ(count(z3, CollectiveKind::reduce_scatter, 1), 16u * 4);
  job.parallelism.zero_stage = 1;
  const StepProgram z1 = program_of(job);
  EXPECT_EQ(count(z1, CollectiveKind::all_gather, 1), 1u);
  const size_t z1_reductions = count(z1, CollectiveKind::reduce_scatter, 1);
  job.parallelism.zero_stage = 2;
  EXPECT_EQ(count(program_of(job), CollectiveKind::reduce_scatter, 1), 4 * z1_reductions);
  // DeepSpeed 2021: one gather per parameter tensor of each linear (weight and bias: 8 per
  // GPT layer) in forward and backward, one reduce-scatter per tensor after backward.
  job.parallelism.zero_stage = 3;
  job.stack = "deepspeed-2021";
  const StepProgram ds = program_of(job);
  EXPECT_EQ(count(ds, CollectiveKind::all_gather, 1), 16u * 8 * 2 * 4);
  EXPECT_EQ(count(ds, CollectiveKind::reduce_scatter, 1), 16u * 8 * 4);
  // v0.6+: one coalesced gather per linear (4 per layer).
  job.stack = "deepspeed";
  EXPECT_EQ(count(program_of(job), CollectiveKind::all_gather, 1), 16u * 4 * 2 * 4);
}

// DeepSpeed 2021 gathers and reduce-scatters through PyTorch's list API (workload/sharding.h):
// each gather zeroes its full buffer first and copies the group's slices out while it runs,
// each reduce-scatter copies them in before it starts, one eager copy per rank on the training
// thread (compute stream): the cost grows with the group, not the bytes. DeepSpeed v0.6+ and
// megatron-core use flat buffers and have none (FSDP2's own copies: FsdpCopiesAroundItsCollectives).
TEST(Replay, ListApiCollectivesCopyOneSlicePerRank) {
  auto program = [](int dp, const char* stack) {
    auto job = small_job(1, 1, dp, 1, dp);
    job.stack = stack;
    job.parallelism.zero_stage = 3;
    StepInput in;
    in.job = job;
    in.cluster = small_cluster(dp / 8);
    in.network_mode = "analytical";
    in.program.fold = true;
    in.program.steps = 2;
    return build_program(in);
  };
  auto job = small_job(1, 1, 32, 1, 32);
  job.stack = "deepspeed-2021";
  job.parallelism.zero_stage = 3;
  const auto node = network::Cluster(small_cluster(4)).node();
  const StageCosts costs = block_costs(job, step_compute_model(job, node), node, CostParams{}).front();
  ASSERT_GT(costs.copy_floor_s, 0.0);
  ASSERT_GT(costs.copy_bytes_per_s, 0.0);
  double host_s[2] = {0, 0};
  for (const int dp : {32, 64}) {
    const StepProgram p = program(dp, "deepspeed-2021");
    const auto& in = p.ranks.front().instrs;
    size_t collectives = 0, host = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].kind == InstrKind::compute && in[i].category == Category::dp) {
        ++host;
        if (in[i].step == 1) host_s[dp == 64] += in[i].seconds;
      }
      if (in[i].kind != InstrKind::collective) continue;
      ++collectives;
      const double bytes = static_cast<double>(in[i].bytes), n = dp;
      ASSERT_TRUE(i > 0 && in[i - 1].kind == InstrKind::compute && in[i - 1].category == Category::dp);
      if (in[i].collective == CollectiveKind::all_gather) {
        EXPECT_DOUBLE_EQ(in[i - 1].seconds, costs.copy_s(bytes));  // torch.zeros of the buffer
        EXPECT_EQ(in[i].after, static_cast<int32_t>(i - 1));
        ASSERT_LT(i + 1, in.size());
        EXPECT_NEAR(in[i + 1].seconds, n * costs.copy_s(2 * bytes / n), 1e-15);  // slices out
        EXPECT_EQ(in[i + 1].stream, Stream::compute);
      } else {
        EXPECT_EQ(in[i].collective, CollectiveKind::reduce_scatter);
        EXPECT_NEAR(in[i - 1].seconds, n * costs.copy_s(2 * bytes / n), 1e-15);  // slices in
        EXPECT_EQ(in[i].after, static_cast<int32_t>(i - 1));
      }
    }
    ASSERT_GT(collectives, 0u);
    EXPECT_EQ(host, collectives + count(p, CollectiveKind::all_gather, 0) +
                        count(p, CollectiveKind::all_gather, 1));
  }
  // Twice the ranks, about twice the copies (the bytes per step are the same).
  EXPECT_GT(host_s[1] / host_s[0], 1.8);
  for (const char* flat : {"deepspeed", "megatron-core"}) {
    const StepProgram p = program(32, flat);
    for (const Instr& i : p.ranks.front().instrs)
      EXPECT_FALSE(i.kind == InstrKind::compute && i.category == Category::dp) << flat;
  }
  // The copies hold the step and count as exposed data-parallel communication.
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(4);
  in.network_mode = "analytical";
  in.program.fold = true;
  const StepResult r = simulate_step(in);
  EXPECT_GT(r.breakdown.exposed_dp_comm_s, host_s[0]);
}

// FSDP's own copies around its collectives (workload/sharding.h), in the compute stream:
// FSDP2 (torchtitan) copies each gathered unit out of the flat buffer (read and write the
// gathered bytes) before the unit runs, and copies the unsharded bf16 gradients into the fp32
// reduce-scatter input (2 + 4 bytes per parameter) before each reduce-scatter; Composer's FSDP1
// casts the gradient to fp32 (2 + 4) and divides it by the predivide factor (4 + 4) before each
// reduce-scatter and gathers into the flat parameter itself. They hold the step.
TEST(Replay, FsdpCopiesAroundItsCollectives) {
  auto input = [](const char* stack) {
    auto job = small_job(1, 1, 32, 1, 32);
    job.stack = stack;
    job.parallelism.zero_stage = 3;
    return step_input_of(job);
  };
  const auto node = network::Cluster(small_cluster(4)).node();
  for (const char* stack : {"torchtitan", "composer"}) {
    const StepInput in = input(stack);
    const StageCosts costs =
        block_costs(in.job, step_compute_model(in.job, node), node, CostParams{}).front();
    const bool fsdp2 = std::string(stack) == "torchtitan";
    const StepProgram p = build_program(in);
    const auto& is = p.ranks.front().instrs;
    size_t gathers = 0, reductions = 0;
    for (size_t i = 0; i < is.size(); ++i) {
      if (is[i].kind != InstrKind::collective) continue;
      const double bytes = static_cast<double>(is[i].bytes);
      if (is[i].collective == CollectiveKind::all_gather && is[i].category == Category::dp &&
          i + 1 < is.size() && is[i + 1].after2 == static_cast<int32_t>(i) &&
          is[i + 1].category == Category::dp) {
        ++gathers;
        EXPECT_TRUE(fsdp2) << stack;
        EXPECT_EQ(is[i + 1].stream, Stream::compute);
        EXPECT_DOUBLE_EQ(is[i + 1].seconds, costs.copy_s(2.0 * bytes));  // copy-out
      }
      if (is[i].collective == CollectiveKind::reduce_scatter) {
        ++reductions;
        ASSERT_GT(i, 0u);
        const Instr& prep = is[static_cast<size_t>(is[i].after)];
        EXPECT_EQ(prep.category, Category::dp) << stack;
        EXPECT_EQ(prep.stream, Stream::compute);
        const double params = bytes / 4.0;  // fp32 reduce-scatters on both stacks
        EXPECT_NEAR(prep.seconds, costs.copy_s(params * (fsdp2 ? 6.0 : 14.0)), 1e-15) << stack;
      }
    }
    EXPECT_GT(reductions, 0u) << stack;
    EXPECT_EQ(gathers > 0, fsdp2) << stack;
    // They run in the compute stream: the last step's data-parallel time holds all of them.
    double copies_s = 0.0;
    for (const Instr& i : is)
      if (i.kind == InstrKind::compute && i.category == Category::dp && i.step == 1) copies_s += i.seconds;
    ASSERT_GT(copies_s, 0.0);
    const StepResult r = simulate_step(in);
    EXPECT_GE(r.breakdown.exposed_dp_comm_s, copies_s * (1 - 1e-9)) << stack;
  }
}

// At a fixed global batch, doubling the GPUs halves each GPU's tokens but not its parameter
// gathers: ZeRO-3's per-GPU throughput falls, ZeRO-1's hardly (Narayanan et al. SC'21
// Table 2 is the published case, test_validation_zero3.cpp).
TEST(Replay, ZeroThreeThroughputFallsAtFixedBatch) {
  auto mfu = [](int stage, int dp, const char* stack) {
    auto job = small_job(1, 1, dp, 1, 64);
    job.stack = stack;
    job.parallelism.zero_stage = stage;
    StepInput in;
    in.job = job;
    in.cluster = small_cluster(dp / 8);
    in.network_mode = "analytical";
    in.program.fold = true;
    return simulate_step(in).mfu;
  };
  // FSDP2 overlaps its per-layer gathers with compute, so it loses less than DeepSpeed 2021,
  // whose gathers wait for the device; here it even loses less than ZeRO-1, whose single
  // reduction is exposed once a replica runs one micro-batch.
  for (const char* stack : {"deepspeed-2021", "torchtitan"})
    EXPECT_LT(mfu(3, 64, stack) / mfu(3, 16, stack), 0.99) << stack;
  EXPECT_LT(mfu(3, 64, "deepspeed-2021") / mfu(3, 16, "deepspeed-2021"),
            mfu(1, 64, "deepspeed-2021") / mfu(1, 16, "deepspeed-2021"));
  EXPECT_LT(mfu(3, 64, "deepspeed-2021"), mfu(3, 64, "torchtitan"));
}

// HSDP: ZeRO-3 within groups of shard_size consecutive DP ranks, each unit's reduced gradient
// shard all-reduced across the replicas; memory shards over the group only.
TEST(Replay, HybridShardingReducesWithinAndAcrossGroups) {
  auto job = small_job(1, 1, 32, 1, 128);
  job.stack = "torchtitan";
  job.parallelism.zero_stage = 3;
  job.parallelism.shard_size = 8;
  const StepProgram p = program_of(job);
  EXPECT_EQ(count(p, CollectiveKind::all_gather, 1), 16u * 2 * 4);
  EXPECT_EQ(count(p, CollectiveKind::reduce_scatter, 1), 16u * 4);
  EXPECT_EQ(count(p, CollectiveKind::all_reduce, 1), 16u * 4);
  for (const Instr& i : p.ranks.front().instrs) {
    if (i.kind != InstrKind::collective) continue;
    const auto& g = p.groups[static_cast<size_t>(i.group)];
    EXPECT_EQ(g.gpus.size(), i.collective == CollectiveKind::all_reduce ? 4u : 8u);
  }
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(4);
  in.network_mode = "analytical";
  in.program.fold = true;
  EXPECT_GT(simulate_step(in).step_time_s, 0.0);
}

// tp_comm_overlap (userbuffers): TP collectives hide behind their GEMMs, but not for free: the
// last reduce-scatter split stays exposed and the GEMMs that keep SMs for it slow down.
TEST(Replay, TensorParallelOverlapIsPartial) {
  auto job = small_job(8, 1, 1, 1, 8);
  job.model.hidden = 8192;
  job.model.heads = 64;
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(1);
  in.network_mode = "analytical";
  const StepResult plain = simulate_step(in);
  in.tp_comm_overlap = true;
  const StepResult overlapped = simulate_step(in);
  EXPECT_LT(overlapped.breakdown.exposed_tp_comm_s, 0.5 * plain.breakdown.exposed_tp_comm_s);
  EXPECT_GT(overlapped.breakdown.exposed_tp_comm_s, 0.05 * plain.breakdown.exposed_tp_comm_s);
  EXPECT_LT(overlapped.step_time_s, plain.step_time_s);
}

// A training step runs on its steady state under the power limit (block_costs.h
// step_compute_model): on a GPU with the measurement, its GEMMs and attention slow to one
// ratio between the GEMM stream's 0.841 and 1; a longer sequence (more attention, which draws
// less than GEMMs) sits higher; A100, not measured, keeps the per-kernel throttle (0).
TEST(Replay, StepRunsAtItsSteadyStateUnderThePowerLimit) {
  workload::JobSpec job = small_job(1, 1, 8);
  const network::ClusterSpec h100 = small_cluster(1);
  const double s = step_compute_model(job, h100.node).steady();
  EXPECT_GT(s, h100.node.gpu.sustained_gemm);
  EXPECT_LT(s, 1.0);
  workload::JobSpec long_seq = job;
  long_seq.model.seq_length = 16384;
  EXPECT_GT(step_compute_model(long_seq, h100.node).steady(), s);
  EXPECT_DOUBLE_EQ(step_compute_model(job, small_cluster(1, "A100-80GB").node).steady(), 0.0);
  // The step is slower than the same step on burst-speed kernels by less than 1/s.
  StepInput in;
  in.job = job;
  in.cluster = h100;
  in.network_mode = "analytical";
  const double steady_step = simulate_step(in).step_time_s;
  in.cluster.node.gpu.sustained_gemm = 0.0;  // the per-kernel throttle instead
  const double per_kernel_step = simulate_step(in).step_time_s;
  EXPECT_GT(steady_step, per_kernel_step);
  EXPECT_LT(steady_step, per_kernel_step / s);
}

// Context parallelism: the K/V ring runs inside the attention op, the transfer for step i+1
// under step i's block (Transformer Engine's AttnFuncWithCP), so per layer the c - 1 transfers
// hide behind (c - 1)/c of the attention, not behind the GEMMs. Backward sends K/V and dK/dV
// together: twice the bytes. Whatever a pass's transfers outlast is exposed, to the second.
TEST(Replay, ContextParallelRingHidesBehindAttention) {
  auto job = small_job(8, 1, 1, 1, 1);
  job.model.seq_length = 131072;  // attention well above the GEMMs
  job.model.layers = 4;
  job.parallelism.context_parallel = 2;
  job.recompute_granularity = "none";
  const network::ClusterSpec cluster = small_cluster(2);  // TP in a node, the CP pair over NICs
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  double attn_f = 0.0, attn_b = 0.0, gemm_f = 0.0;
  for (const KernelTime& k : layer_kernel_times(job, compute)) {
    if (k.layer != "transformer") continue;
    if (k.kind == "attention") (k.pass == "forward" ? attn_f : attn_b) += k.seconds;
    if (k.kind == "gemm" && k.pass == "forward") gemm_f += k.seconds;
  }
  // One ring step's K/V, bf16: 2 (K and V) x s/c tokens x hidden / t (MHA).
  const double c = 2, kv = 2.0 * 131072 / c * 4096 * 2 / 8;
  auto layer_comm = [&](double nic_bytes_per_s) {
    CostParams p;
    p.nic_bytes_per_s = nic_bytes_per_s;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, p);
    return std::pair{s[0].forward[0].tp_comm_s / 4, s[0].backward[0].tp_comm_s / 4};
  };
  CostParams d;
  auto ring = [&](double rate) { return (c - 1) * (d.step_latency_s + kv / (rate * d.protocol_efficiency)); };
  const auto unlimited = layer_comm(1e18);
  // A NIC whose forward transfer outlasts the layer's GEMMs but not its attention: still hidden.
  const double rate_mid = kv / d.protocol_efficiency / (0.5 * (gemm_f + attn_f * (c - 1) / c));
  ASSERT_GT(ring(rate_mid), gemm_f);
  ASSERT_LT(ring(rate_mid), attn_f * (c - 1) / c);
  EXPECT_DOUBLE_EQ(layer_comm(rate_mid).first, unlimited.first);
  // A slow NIC: the exposed part is the transfer minus the attention it runs under.
  const double slow = kv / d.protocol_efficiency / (4.0 * attn_b);
  const auto exposed = layer_comm(slow);
  EXPECT_NEAR(exposed.first - unlimited.first, ring(slow) - attn_f * (c - 1) / c, 1e-9);
  EXPECT_NEAR(exposed.second - unlimited.second, 2 * ring(slow) - attn_b * (c - 1) / c, 1e-9);
}

// torchtitan's context parallelism is PyTorch's ring attention: it shards SDPA's inputs, K and V
// after repeat_kv (heads / kv_heads copies), all-gathers them once per pass (hidden behind the
// first of the c blocks only), and in backward also sends the fp32 dK/dV (twice K/V's bytes)
// to the next rank after each of its c blocks (each behind one block).
TEST(Replay, PyTorchRingAttentionGathersTheExpandedKeysAndRotatesFp32Gradients) {
  auto job = small_job(8, 1, 1, 1, 1);
  job.model.seq_length = 131072;
  job.model.layers = 4;
  job.model.kv_heads = 8;  // 32 query heads: 4 copies of each K/V head
  job.parallelism.context_parallel = 2;
  job.recompute_granularity = "none";
  job.stack = "torchtitan";
  const network::ClusterSpec cluster = small_cluster(2);  // TP in a node, the CP pair over NICs
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  double attn_f = 0.0, attn_b = 0.0;
  for (const KernelTime& k : layer_kernel_times(job, compute)) {
    if (k.layer == "transformer" && k.kind == "attention")
      (k.pass == "forward" ? attn_f : attn_b) += k.seconds;
  }
  auto layer_comm = [&](double nic_bytes_per_s) {
    CostParams p;
    p.nic_bytes_per_s = nic_bytes_per_s;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, p);
    return std::pair{s[0].forward[0].tp_comm_s / 4, s[0].backward[0].tp_comm_s / 4};
  };
  // The local K and V as SDPA sees them, bf16: 2 x s/c tokens x (32 heads x 128) / t.
  const double c = 2, expanded = 2.0 * 131072 / c * 4096 * 2 / 8;
  const CostParams d;
  const double slow = expanded / d.protocol_efficiency / (2.0 * attn_b);
  const double rate = slow * d.protocol_efficiency;
  const double gather = (c - 1) * (d.step_latency_s + expanded / rate);
  const double dkv_step = d.step_latency_s + 2 * expanded / rate;
  ASSERT_GT(gather, attn_b / c);
  ASSERT_GT(dkv_step, attn_b / c);
  const auto unlimited = layer_comm(1e18);
  const auto exposed = layer_comm(slow);
  EXPECT_NEAR(exposed.first - unlimited.first, gather - attn_f / c, 1e-9);
  EXPECT_NEAR(exposed.second - unlimited.second, gather - attn_b / c + c * (dkv_step - attn_b / c), 1e-9);
  // Megatron's stack at the same NIC: the ring of the un-expanded K/V behind (c - 1) / c of the
  // attention, backward twice the bytes.
  job.stack = "megatron-core";
  const hardware::ComputeModel te = step_compute_model(job, cluster.node);
  double te_f = 0.0;
  for (const KernelTime& k : layer_kernel_times(job, te)) {
    if (k.layer == "transformer" && k.kind == "attention" && k.pass == "forward") te_f += k.seconds;
  }
  const double te_slow = expanded / 4 / d.protocol_efficiency / (2.0 * te_f);
  const double ring = (c - 1) * (d.step_latency_s + expanded / 4 / (te_slow * d.protocol_efficiency));
  ASSERT_GT(ring, te_f * (c - 1) / c);
  auto te_forward = [&](double nic_bytes_per_s) {
    CostParams p;
    p.nic_bytes_per_s = nic_bytes_per_s;
    return block_costs(job, te, cluster.node, p)[0].forward[0].tp_comm_s / 4;
  };
  EXPECT_NEAR(te_forward(te_slow) - te_forward(1e18), ring - te_f * (c - 1) / c, 1e-9);
}

// Expert parallelism: each rank's routed tokens go to the e members of its expert group in equal
// shares, the members in its NVLink domain over NVLink and the others out of its NIC, at once; the
// dispatch and the combine are exposed (nothing else waits-free beside them). Two nodes of 8:
// EP 16 sends half of the routed bytes over the NICs; EP 8 stays in the node, whatever the NIC.
TEST(Replay, ExpertAllToAllSplitsTrafficByDestination) {
  auto job = small_moe_job();
  const network::ClusterSpec cluster = small_cluster(2);
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  auto per_layer = [&](int ep, double nic_bytes_per_s) {
    job.parallelism.expert_parallel = ep;
    CostParams p;
    p.nic_bytes_per_s = nic_bytes_per_s;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, p);
    return std::pair{s[0].forward[0].tp_comm_s / 4, s[0].backward[0].tp_comm_s / 4};
  };
  const CostParams d;
  const double routed = 2048.0 * 4096 * 2 * 2;  // tokens x hidden x bf16 x top_k
  const double nic = 5e9;                       // slow enough that the NIC share dominates
  const auto cross = per_layer(16, nic);
  const double expected = 2 * (15 * d.step_latency_s + routed * 8 / 16 / (nic * d.protocol_efficiency));
  EXPECT_NEAR(cross.first, expected, 1e-12);
  EXPECT_NEAR(cross.second, expected, 1e-12);  // backward's dispatch + combine, no recompute
  EXPECT_DOUBLE_EQ(per_layer(8, nic).first, per_layer(8, 1e15).first);
  EXPECT_LT(per_layer(8, nic).first, 0.2 * cross.first);
}

// The flex dispatcher (DeepEP / HybridEP) sends a token once to each GPU that holds one of its
// experts and once to each other NVLink domain, which forwards it over NVLink: 16 experts, top 2,
// one expert a rank at EP 16 over two nodes of 8. A given rank is hit with probability
// 1 - C(15,2)/C(16,2) = 1/8, the other node with 1 - C(8,2)/C(16,2) = 23/30: 23/30 of a token
// crosses the NICs where alltoall sends its 2 x 8/16 = 1. Inside one node (EP 8, two experts a
// rank, hit with 1 - C(14,2)/C(16,2) = 29/120) 7 x 29/120 of a token goes over NVLink against
// alltoall's 2 x 7/8; across the two nodes each rank also forwards what its peer sends it.
TEST(Replay, TokenDispatchSendsATokenOncePerGpuAndDomain) {
  auto job = small_moe_job();
  const network::ClusterSpec cluster = small_cluster(2);
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  auto per_layer = [&](int ep, bool flex, double nic) {
    job.parallelism.expert_parallel = ep;
    job.moe_dispatcher =
        flex ? workload::JobSpec::MoeDispatcher::deepep : workload::JobSpec::MoeDispatcher::alltoall;
    CostParams p;
    p.nic_bytes_per_s = nic;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, p);
    return std::pair{s[0].forward[0].tp_comm_s / 4, s[0].backward[0].tp_comm_s / 4};
  };
  const CostParams d;
  const double token = 2048.0 * 4096 * 2;  // a micro-batch's tokens x hidden x bf16
  const double slow_nic = 5e9, fast_nic = 1e15;
  const auto cross = per_layer(16, true, slow_nic);
  const double expected =
      2 * (15 * d.step_latency_s + token * 23.0 / 30.0 / (slow_nic * d.protocol_efficiency));
  EXPECT_NEAR(cross.first, expected, 1e-12);
  EXPECT_NEAR(cross.second, expected, 1e-12);
  const double latency16 = 2 * 15 * d.step_latency_s, latency8 = 2 * 7 * d.step_latency_s;
  EXPECT_NEAR((cross.first - latency16) / (per_layer(16, false, slow_nic).first - latency16), 23.0 / 30.0,
              1e-9);
  // Inside one node, NVLink bound: 7 x 29/120 tokens against alltoall's 2 x 7/8.
  const double flex8 = per_layer(8, true, fast_nic).first - latency8;
  const double alltoall8 = per_layer(8, false, fast_nic).first - latency8;
  EXPECT_NEAR(flex8 / alltoall8, 7 * 29.0 / 120.0 / (2 * 7 / 8.0), 1e-9);
  // Across two nodes, NVLink bound: the rank's own 7 x 1/8 plus as much forwarded for its peer,
  // 1.75 tokens, as many as alltoall moves over NVLink inside one node.
  EXPECT_NEAR((per_layer(16, true, fast_nic).first - latency16) / alltoall8, 1.0, 1e-9);
  EXPECT_GT(alltoall8, 0.0);
  // Under the combined 1F1B schedule an exchange far shorter than the compute beside it costs
  // the SMs its kernels hold: DeepEP's 20, HybridEP's 32, NCCL's ring CTAs for alltoall.
  using D = workload::JobSpec::MoeDispatcher;
  const double sms = cluster.node.gpu.sm_count;
  for (const auto& [dispatcher, held] :
       {std::pair{D::deepep, 20.0 / sms}, std::pair{D::hybridep, 32.0 / sms}}) {
    job.parallelism.expert_parallel = 8;
    job.moe_dispatcher = dispatcher;
    CostParams p;
    p.nic_bytes_per_s = fast_nic;
    job.moe_a2a_overlap = false;
    const double alone = block_costs(job, compute, cluster.node, p)[0].forward[0].tp_comm_s;
    job.moe_a2a_overlap = true;
    const double paired = block_costs(job, compute, cluster.node, p)[0].forward[0].tp_comm_s;
    EXPECT_NEAR(paired / alone, held, 1e-9);
  }
}

// Sequence-parallel TP collectives per layer, without overlap: the forward's 2 input all-gathers
// and 2 reduce-scatters, the backward's 2 output-gradient all-gathers and 2 reduce-scatters.
// Under FP8 the all-gathers move 1 byte per element where the stack casts before gathering:
// Transformer Engine every all-gather (forward input, output gradient), torchao's float8 the
// forward input only; reduce-scatters stay bf16. torchtitan's op-level selective recompute
// replays what its policy does not save: the all-gathers, half of the forward's collectives.
TEST(Replay, TensorParallelGathersMoveWhatTheStackCasts) {
  auto job = small_job(8, 1, 1, 1, 8);
  job.tp_async_backward = false;
  const network::ClusterSpec cluster = small_cluster(1);
  auto per_layer = [&](const std::string& stack, const std::string& precision, const std::string& recompute,
                       bool overlap = false) {
    job.stack = stack;
    job.precision = precision;
    job.recompute_granularity = recompute;
    const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
    CostParams params;
    params.tp_comm_overlap = overlap;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, params);
    const double layers = job.model.layers;
    return std::pair{s[0].forward[0].tp_comm_s / layers, s[0].backward[0].tp_comm_s / layers};
  };
  // PyTorch's DTensor TP (torchtitan, pytorch) shards the sequence dimension: every all-gather
  // ends and every reduce-scatter starts with a copy of the collective's whole tensor (read and
  // write, an eager copy at the calibrated streaming rate), A = micro-batch x sequence x hidden
  // x 2 bytes, half of it for an FP8 gather.
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  const auto& streaming = compute.calibration().elementwise.streaming;
  const double activation = 1.0 * 2048 * 4096 * 2;
  auto copy = [&](double bytes) {
    return streaming.launch_s + 2.0 * bytes / (compute.gpu().hbm_bytes_per_s * streaming.eff);
  };
  const double fp8_copy_saving = copy(activation) - copy(activation / 2);
  const auto te_bf16 = per_layer("megatron-core", "bf16", "none");
  const auto te_fp8 = per_layer("megatron-core", "fp8", "none");
  // The bandwidth part of one bf16 all-gather is what FP8 saves on two of them: 2 x B / 2.
  const double b = te_bf16.first - te_fp8.first;
  ASSERT_GT(b, 0.0);
  EXPECT_NEAR(te_bf16.second - te_fp8.second, b, 1e-12);  // TE: the gradient gathers too
  const auto ao_bf16 = per_layer("torchtitan", "bf16", "none");
  const auto ao_fp8 = per_layer("torchtitan", "fp8-cs", "none");
  // The same rings as megatron-core's, plus four copies of A a pass (two gathers, two scatters).
  EXPECT_NEAR(ao_bf16.first - te_bf16.first, 4 * copy(activation), 1e-12);
  EXPECT_NEAR(ao_bf16.second - te_bf16.second, 4 * copy(activation), 1e-12);
  EXPECT_NEAR(ao_bf16.first - ao_fp8.first, b + 2 * fp8_copy_saving, 1e-12);
  EXPECT_NEAR(ao_bf16.second, ao_fp8.second, 1e-12);  // torchao: gradients gathered in bf16
  // Op-level selective recompute replays the two all-gathers (with their copies): half the bf16
  // forward's four collectives.
  const auto ao_sel = per_layer("torchtitan", "bf16", "selective");
  EXPECT_NEAR(ao_sel.second - ao_bf16.second, ao_bf16.first / 2, 1e-12);
  EXPECT_NEAR(per_layer("torchtitan", "fp8-cs", "selective").second - ao_fp8.second,
              ao_bf16.first / 2 - b - 2 * fp8_copy_saving, 1e-12);
  // Megatron's selective recompute replays no collective.
  EXPECT_NEAR(per_layer("megatron-core", "bf16", "selective").second, te_bf16.second, 1e-12);
  // tp_comm_overlap on torchtitan is PyTorch's async TP (symmetric_memory_exposed): the forward's
  // fused all-gather / reduce-scatter matmuls take the shards where they land (no DTensor copy;
  // a shard copy into the symmetric buffer per gather and a reduction of the t partials per
  // scatter instead), the backward's collectives stay plain, copies included.
  const auto ao_overlap = per_layer("torchtitan", "bf16", "none", true);
  const double t = 8;
  const double floor = 2 * copy(activation / t) + 2 * copy(activation * (1 + 1 / t) / 2);
  EXPECT_GT(ao_overlap.first, floor);
  EXPECT_LT(ao_overlap.first, ao_bf16.first - 4 * copy(activation) + floor);
  EXPECT_NEAR(ao_overlap.second, ao_bf16.second, 1e-12);
  // A full recompute replays the fused forward (its GEMMs on the full-recompute step's steady
  // clock, hence 1%); an op-level selective one the plain gathers.
  EXPECT_NEAR(per_layer("torchtitan", "bf16", "full", true).second - ao_overlap.second, ao_overlap.first,
              0.01 * ao_overlap.first);
  EXPECT_NEAR(per_layer("torchtitan", "bf16", "selective", true).second - ao_overlap.second,
              ao_bf16.first / 2, 1e-12);
  // Transformer Engine's userbuffers (megatron-core) hide the backward's collectives too.
  EXPECT_LT(per_layer("megatron-core", "bf16", "none", true).second, te_bf16.second);
}

// PyTorch's async TP in closed form (symmetric_memory_exposed), one layer's forward: each fused
// all-gather matmul exposes its shard copy and what the gather u outlasts (t - 1)/t of its
// matmuls; each fused matmul reduce-scatter the longer of its last chunk's transfer u / (t - 1)
// and what the transfers outlast the matmuls, plus the reduction of the t partials; every fused
// matmul what its t row shards cost over the whole. u from megatron-core's plain rings (bf16
// gathers and scatters move the same bytes: a quarter of the forward's four).
std::pair<double, double> check_async_tp_forward(int64_t ffn_hidden) {
  auto job = small_job(8, 1, 1, 1, 8);
  job.model.ffn_hidden = ffn_hidden;
  job.tp_async_backward = false;
  job.precision = "bf16";
  job.recompute_granularity = "none";
  const network::ClusterSpec cluster = small_cluster(1);
  auto forward = [&](const std::string& stack, bool overlap) {
    job.stack = stack;
    const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
    CostParams params;
    params.tp_comm_overlap = overlap;
    return block_costs(job, compute, cluster.node, params)[0].forward[0].tp_comm_s / job.model.layers;
  };
  const double u = forward("megatron-core", false) / 4;
  const double async = forward("torchtitan", true);
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  const auto& streaming = compute.calibration().elementwise.streaming;
  const double rate = compute.gpu().hbm_bytes_per_s * streaming.eff, t = 8;
  const double a = 1.0 * 2048 * 4096 * 2;  // micro-batch x sequence x hidden x bf16
  auto gemm = [&](std::string_view name, bool shards) {
    double s = 0.0;
    for (const workload::Op& op : workload::transformer_layer_ops(job).forward) {
      if (op.kind != workload::OpKind::gemm || op.name != name) continue;
      s += shards ? compute.gemm_time(op.m / 8, op.n, op.k, op.count * 8, op.fp8, op.mx).seconds()
                  : compute.gemm_time(op.m, op.n, op.k, op.count, op.fp8, op.mx).seconds();
    }
    return s;
  };
  auto split = [&](std::string_view name) { return std::max(0.0, gemm(name, true) - gemm(name, false)); };
  auto gather = [&](std::string_view name) {
    return streaming.launch_s + 2 * a / t / rate + std::max(0.0, u - gemm(name, false) * (t - 1) / t) +
           split(name);
  };
  auto scatter = [&](std::string_view name) {
    return std::max(u / (t - 1), u - gemm(name, false) * (t - 1) / t) + streaming.launch_s +
           a * (1 + 1 / t) / rate + split(name);
  };
  const double expected = gather("qkv") + scatter("proj") + gather("fc1") + scatter("fc2");
  EXPECT_NEAR(async, expected, 1e-12);
  return std::pair{u, gemm("fc2", false)};
}

TEST(Replay, AsyncTensorParallelForwardInClosedForm) {
  // The default MLP: the gathers outlast their matmuls; a 16x wider one, whose down projection
  // (fc2) hides all but the last chunk's transfer of its reduce-scatter.
  const auto narrow = check_async_tp_forward(0);
  EXPECT_GT(narrow.first - narrow.second * 7 / 8, narrow.first / 7);
  const auto wide = check_async_tp_forward(16 * 4096);
  EXPECT_LT(wide.first - wide.second * 7 / 8, wide.first / 7);
}

// DeepEP's published internode kernels at DeepSeek-V3's shape (256 experts, top 8, hidden 7168,
// FP8 dispatch with one fp32 scale per 128 values, BF16 combine), EP 32 = 4 nodes of 8 GPUs with a
// CX7 400 Gb/s NIC each. The bandwidth DeepEP prints is logical: the bytes of each (token, node)
// pair the token is routed to, its own node included (tests/legacy/test_internode.py:
// num_rdma_token_sent x hidden; README note "contains local rank traffic"), over the kernel's
// time. V1 on H800 (docs/legacy.md @ dd758ca, 4,096 tokens): dispatch 58 GB/s, combine 57; V2
// (README.md @ dd758ca, 8,192 tokens, SM90): 61 and 61. token_dispatch at the rates a step uses
// (NIC x protocol efficiency; H800's NVLink as its ring reaches it, 160 GB/s) gives 60.1 / 61.6
// and 61.7 / 62.5: within 10%. Not asserted: EP 16 (2 nodes), where the twin is NVLink-bound on
// H800 (V1: 43 and 43 published, 53.6 and 54.7 here) and V2 does not say which SM90 GPU it ran.
TEST(Replay, TokenDispatchMatchesDeepEPPublishedInternodeBandwidth) {
  workload::MoeSpec m;
  m.experts = 256;
  m.top_k = 8;
  const CostParams d;
  const double nic = 50e9 * d.protocol_efficiency, nvlink = 160e9;
  // Expected nodes a token reaches among 4 of 64 experts each: 4 (1 - C(192, 8) / C(256, 8)).
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (192.0 - i) / (256.0 - i);
  const double nodes_hit = 4.0 * (1.0 - miss);
  const double fp8_token = 7168 + 7168 / 128 * 4, bf16_token = 7168 * 2;
  struct Published {
    double tokens, bytes_per_token, gb_per_s;
  };
  for (const Published& row : {Published{4096, fp8_token, 58}, Published{4096, bf16_token, 57},
                               Published{8192, fp8_token, 61}, Published{8192, bf16_token, 61}}) {
    const double bytes = row.tokens * row.bytes_per_token;
    const double seconds = token_dispatch(32, 8, m, bytes, nvlink, nic, d.step_latency_s);
    const double logical = bytes * nodes_hit / seconds / 1e9;
    EXPECT_NEAR(logical / row.gb_per_s, 1.0, 0.10)
        << row.tokens << " tokens of " << row.bytes_per_token << " B";
  }
}

// Megatron's combined 1F1B schedule (moe_a2a_overlap): two micro-batches' forward and backward
// co-scheduled layer by layer, each layer in attention, dispatch, MLP and combine. The forward's
// dispatch runs beside the backward's MLP and its combine beside the backward's attention; the
// backward's combine beside the forward's attention and its dispatch beside the forward's MLP.
// What outlasts that compute is exposed, and the compute loses NCCL's SMs while both run.
TEST(Replay, CombinedOneFOneBHidesTheExpertAllToAllUnderTheOtherPass) {
  auto job = small_moe_job();
  job.parallelism.expert_parallel = 16;
  const network::ClusterSpec cluster = small_cluster(2);
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  // Each pass's attention and MLP blocks: forward from mlp_norm on, backward up to mlp_norm.bwd.
  double attn_f = 0.0, mlp_f = 0.0, attn_b = 0.0, mlp_b = 0.0;
  bool f_mlp = false, b_mlp = true;
  for (const KernelTime& k : layer_kernel_times(job, compute)) {
    if (k.layer != "transformer") continue;
    if (k.pass == "forward") {
      f_mlp = f_mlp || k.name == "mlp_norm";
      (f_mlp ? mlp_f : attn_f) += k.seconds;
    } else if (k.pass == "backward") {
      (b_mlp ? mlp_b : attn_b) += k.seconds;
      b_mlp = b_mlp && k.name != "mlp_norm.bwd";
    }
  }
  ASSERT_GT(mlp_b, attn_b);
  auto per_layer = [&](bool overlap, double nic) {
    job.moe_a2a_overlap = overlap;
    CostParams p;
    p.nic_bytes_per_s = nic;
    const std::vector<StageCosts> s = block_costs(job, compute, cluster.node, p);
    return std::pair{s[0].forward[0].tp_comm_s / 4, s[0].backward[0].tp_comm_s / 4};
  };
  const double share =
      collective::ring_intra_ctas(collective::nccl_nvlink_total(cluster.node.nvlink_rate.bytes_per_second()),
                                  cluster.node.gpu.sm_arch) /
      static_cast<double>(cluster.node.gpu.sm_count);
  ASSERT_GT(share, 0.0);
  auto beside = [&](double comm, double busy) {
    return std::max(0.0, comm - busy) + std::min(comm, busy) * share;
  };
  // The NIC rate at which dispatch (half the exchange) lasts as long as the backward's two blocks
  // on average: longer than its attention, shorter than its MLP.
  const double unit = per_layer(false, 1e9).first * 1e9;  // exchange x NIC rate (latency aside: tiny)
  for (const double nic : {5e8, unit / (attn_b + mlp_b), 5e11}) {
    const auto alone = per_layer(false, nic), paired = per_layer(true, nic);
    const double half = alone.first / 2;  // the forward's dispatch or combine (nothing else exposed)
    ASSERT_GT(half, 0.0);
    EXPECT_NEAR(paired.first, beside(half, mlp_b) + beside(half, attn_b), 1e-12) << nic;
    EXPECT_NEAR(paired.second, beside(half, attn_f) + beside(half, mlp_f), 1e-12) << nic;
    EXPECT_LT(paired.first, alone.first);
  }
}

// The dispatcher's host sync (job.moe_host_sync): each MoE layer's forward waits
// kMoeHostSyncS, and so does each replay of its expert block (selective recompute of "moe", full
// recompute) before backward; the leading dense layers of an MoE model and a dense model do not
// wait; it lands in the exposed EP / TP time, not in the kernels'.
TEST(Replay, MoeHostSyncWaitsOncePerMoeLayerForwardAndReplay) {
  auto job = small_moe_job();
  job.parallelism.expert_parallel = 4;
  job.model.moe.dense_layers = 1;  // 1 dense + 3 MoE layers
  const network::ClusterSpec cluster = small_cluster(2);
  const hardware::ComputeModel compute = step_compute_model(job, cluster.node);
  auto costs = [&](bool sync) {
    job.moe_host_sync = sync;
    return block_costs(job, compute, cluster.node, CostParams{})[0];
  };
  auto check = [&](double replays, const char* what) {
    const StageCosts off = costs(false), on = costs(true);
    EXPECT_EQ(on.forward[0].compute_s, off.forward[0].compute_s) << what;
    EXPECT_EQ(on.backward[0].compute_s, off.backward[0].compute_s) << what;
    EXPECT_NEAR(on.forward[0].tp_comm_s - off.forward[0].tp_comm_s, 3 * kMoeHostSyncS, 1e-12) << what;
    EXPECT_NEAR(on.backward[0].tp_comm_s - off.backward[0].tp_comm_s, replays * kMoeHostSyncS, 1e-12) << what;
  };
  check(0, "no recompute");
  job.recompute_granularity = "selective";
  job.recompute_modules = workload::recompute_module::moe;
  check(3, "the expert block replayed");
  job.recompute_modules = workload::recompute_module::moe_act;
  check(0, "only the experts' activation replayed");
  job.recompute_modules = 0;
  job.recompute_granularity = "full";
  check(3, "full recompute");
  // A dense model has no dispatcher to wait for.
  auto dense = small_job(1, 1, 16, 1, 16);
  dense.moe_host_sync = true;
  const StageCosts d_on = block_costs(dense, compute, cluster.node, CostParams{})[0];
  dense.moe_host_sync = false;
  const StageCosts d_off = block_costs(dense, compute, cluster.node, CostParams{})[0];
  EXPECT_EQ(d_on.forward[0].tp_comm_s, d_off.forward[0].tp_comm_s);
  EXPECT_EQ(d_on.backward[0].tp_comm_s, d_off.backward[0].tp_comm_s);
}

namespace {
// A communicator for programs without communication.
struct NoComm final : Communicator {
  void send(int, int, sim::Bytes, CommHandler&, uint64_t) override { FAIL() << "no sends here"; }
  void collective(CollectiveKind, std::span<const int>, sim::Bytes, CommHandler&, uint64_t,
                  uint64_t) override {
    FAIL() << "no collectives here";
  }
};
}  // namespace

// The busy-GPU buckets the step's power reads (ExecutorOptions::busy_from_step) are those of
// the whole run from the bucket the first rank entered the last step in, to the last bit: two
// ranks of unequal compute blocks (some within a bucket, some spanning many) over three steps.
TEST(Replay, BusyBucketsOfTheLastStepsEqualTheWholeRunsFromWhereTheyStart) {
  StepProgram p;
  p.steps = 3;
  for (int r = 0; r < 2; ++r) {
    RankProgram rank;
    rank.gpu = r;
    for (int16_t step = 0; step < 3; ++step) {
      for (const double s : {37e-6, 2.31e-3, 0.5e-6, 1.17e-3 * (r + 1)}) {
        Instr c;
        c.seconds = s;
        c.step = step;
        rank.instrs.push_back(c);
      }
      Instr end;
      end.category = Category::step_end;
      end.step = step;
      rank.instrs.push_back(end);
    }
    p.ranks.push_back(std::move(rank));
  }
  auto run_from = [&](int from_step) {
    sim::Simulation sim(1);
    NoComm comm;
    ExecutorOptions o;
    o.rank_weight = {3.0, 5.0};
    o.busy_from_step = from_step;
    return execute(p, sim, comm, o);
  };
  const ExecutionResult all = run_from(0), last = run_from(2);
  EXPECT_EQ(all.busy_first_bucket, 0u);
  ASSERT_GT(last.busy_first_bucket, 0u);
  ASSERT_EQ(last.busy_first_bucket + last.busy_gpus.size(), all.busy_gpus.size());
  // The first rank ends step 1 after 2 x (37 us + 2.31 ms + 0.5 us + 1.17 ms): in bucket 70.
  EXPECT_EQ(last.busy_first_bucket, 70u);
  for (size_t k = 0; k < last.busy_gpus.size(); ++k)
    EXPECT_EQ(last.busy_gpus[k], all.busy_gpus[last.busy_first_bucket + k]) << "bucket " << k;
  EXPECT_EQ(all.ranks[0].step_end_s, last.ranks[0].step_end_s);
}

// DeepSpeed's BF16_Optimizer (stack deepspeed, bf16, ZeRO <= 1; workload/memory.h): every
// micro-batch's backward of a chunk ends with the fp32 gradient update, 18 bytes per parameter
// of the chunk at the memory-bound rate; its gradients are fp32 (4 bytes) in memory and in the
// data-parallel reduction. DeepSpeed before it (deepspeed-2021) and ZeRO-2 do neither.
TEST(Replay, Bf16OptimizerUpdatesFp32GradientsAfterEveryBackward) {
  auto job = small_job(2, 2, 2, 1, 16);
  job.stack = "deepspeed";
  job.parallelism.zero_stage = 1;
  auto before = job;
  before.stack = "deepspeed-2021";
  auto zero2 = job, no_pipeline = job;
  zero2.parallelism.zero_stage = 2;
  no_pipeline.parallelism.pipeline_parallel = 1;
  ASSERT_TRUE(workload::bf16_optimizer(job));
  EXPECT_FALSE(workload::bf16_optimizer(before));
  EXPECT_FALSE(workload::bf16_optimizer(zero2));
  EXPECT_FALSE(workload::bf16_optimizer(no_pipeline));
  EXPECT_EQ(workload::stack_memory(job).grad_bytes, 4.0);
  EXPECT_EQ(workload::stack_memory(before).grad_bytes, 2.0);
  const auto node = network::Cluster(small_cluster(1)).node();
  const auto compute = step_compute_model(job, node);
  const auto with = block_costs(job, compute, node, CostParams{});
  const auto without = block_costs(before, compute, node, CostParams{});
  ASSERT_EQ(with.size(), 2u);
  for (size_t s = 0; s < with.size(); ++s) {
    auto moved = [&](double bytes) {
      return compute.elementwise_time(sim::Bytes{static_cast<int64_t>(with[s].params_per_chunk * bytes)})
          .seconds();
    };
    EXPECT_GT(moved(18.0), moved(6.0));
    EXPECT_DOUBLE_EQ(with[s].forward[0].total_s(), without[s].forward[0].total_s());
    // DeepSpeed before it accumulates the 16-bit gradients in .grad instead (6 bytes).
    EXPECT_NEAR(with[s].backward[0].total_s() - without[s].backward[0].total_s(), moved(18.0) - moved(6.0),
                1e-12);
  }
}

// What each stack moves to add a micro-batch's gradients into those kept across micro-batches
// (memory.h grad_accumulation_bytes_per_param): Megatron without gradient accumulation fusion
// 2 + 2 g (its fp32 buffer 10, a 16-bit one 6), DeepSpeed's fp16 engine with ZeRO 0-1 6, FSDP2
// with pipeline parallelism 10 (fp32 accumulator), fused accumulation and per-micro-batch FSDP
// nothing; the backward of every chunk grows by exactly that.
TEST(Replay, UnfusedGradientAccumulationAddsEachMicroBatchIntoTheBuffer) {
  auto job = small_job(2, 2, 2, 1, 16);
  job.stack = "megatron-core";
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(job), 0.0);
  auto unfused = job;
  unfused.gradient_accumulation_fusion = false;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(unfused), 10.0);
  auto half = unfused;
  half.grad_reduce_bytes = 2;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(half), 6.0);
  EXPECT_EQ(workload::stack_memory(half).grad_bytes, 2.0);
  EXPECT_EQ(workload::stack_memory(half).reduce_bytes, 2.0);
  auto ds = job;
  ds.stack = "deepspeed-2021";
  ds.parallelism.zero_stage = 1;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(ds), 6.0);
  ds.parallelism.zero_stage = 2;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(ds), 0.0);
  auto titan = job;
  titan.stack = "torchtitan";
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(titan), 0.0);
  // FSDP2 with pipeline parallelism keeps the stage gathered and adds each micro-batch's bf16
  // gradient into an fp32 accumulator until the last one: 2 + 2 x 4. Without PP (or on
  // Composer's FSDP1) it reduce-scatters every micro-batch: nothing kept.
  titan.parallelism.zero_stage = 3;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(titan), 10.0);
  titan.stack = "pytorch";
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(titan), 0.0);  // not kept gathered
  titan.stack = "torchtitan";
  titan.parallelism.pipeline_parallel = 1;
  EXPECT_EQ(workload::grad_accumulation_bytes_per_param(titan), 0.0);

  const auto node = network::Cluster(small_cluster(1)).node();
  const auto compute = step_compute_model(job, node);
  const auto fused_costs = block_costs(job, compute, node, CostParams{});
  for (const auto* other : {&unfused, &half}) {
    const auto costs = block_costs(*other, compute, node, CostParams{});
    ASSERT_EQ(costs.size(), fused_costs.size());
    for (size_t s = 0; s < costs.size(); ++s) {
      const double add =
          compute
              .elementwise_time(sim::Bytes{static_cast<int64_t>(
                  costs[s].params_per_chunk * workload::grad_accumulation_bytes_per_param(*other))})
              .seconds();
      EXPECT_GT(add, 0.0);
      EXPECT_DOUBLE_EQ(costs[s].forward[0].total_s(), fused_costs[s].forward[0].total_s());
      EXPECT_NEAR(costs[s].backward[0].total_s() - fused_costs[s].backward[0].total_s(), add, 1e-12);
    }
  }
  // 16-bit gradient buffers halve the data-parallel reduction.
  StepInput in;
  in.job = job;
  in.cluster = small_cluster(1);
  in.network_mode = "analytical";
  in.program.fold = true;
  in.program.overlap_grad_reduce = false;
  const StepResult fp32 = simulate_step(in);
  in.job.grad_reduce_bytes = 2;
  const StepResult bf16 = simulate_step(in);
  EXPECT_LT(bf16.breakdown.exposed_dp_comm_s, fp32.breakdown.exposed_dp_comm_s);
}

// Sliding-window attention (ModelSpec::sliding_window): a windowed layer's attention covers the
// causal band only, the full-attention layers (every full_attention_every-th) keep the whole
// sequence, so a chunk alternating the two costs the mean of an all-windowed chunk and a chunk
// without windows; everything but the attention core is unchanged. Model FLOPs count the band.
TEST(Replay, SlidingWindowLayersAttendOverTheBand) {
  auto job = small_job(1, 2, 1, 1, 8);  // 16 layers, 8 per stage
  job.model.seq_length = 16384;
  job.model.activation = "swiglu";
  job.attention = "flash";
  job.recompute_granularity = "none";
  const auto node = network::Cluster(small_cluster(1)).node();
  const auto compute = step_compute_model(job, node);
  auto windowed = job, alternating = job;
  windowed.model.sliding_window = 1024;
  alternating.model.sliding_window = 1024;
  alternating.model.full_attention_every = 2;
  EXPECT_FALSE(workload::windowed_layer(job.model, 0));
  EXPECT_TRUE(workload::windowed_layer(alternating.model, 0));
  EXPECT_FALSE(workload::windowed_layer(alternating.model, 1));
  EXPECT_TRUE(workload::windowed_layer(windowed.model, 1));
  const auto full = block_costs(job, compute, node, CostParams{});
  const auto win = block_costs(windowed, compute, node, CostParams{});
  const auto alt = block_costs(alternating, compute, node, CostParams{});
  for (size_t s = 0; s < full.size(); ++s) {
    EXPECT_LT(win[s].forward[0].total_s(), full[s].forward[0].total_s());
    EXPECT_LT(win[s].backward[0].total_s(), full[s].backward[0].total_s());
    EXPECT_NEAR(alt[s].forward[0].total_s(), (win[s].forward[0].total_s() + full[s].forward[0].total_s()) / 2,
                1e-9 * full[s].forward[0].total_s());
    EXPECT_NEAR(alt[s].backward[0].total_s(),
                (win[s].backward[0].total_s() + full[s].backward[0].total_s()) / 2,
                1e-9 * full[s].backward[0].total_s());
  }
  // The attention core's FLOPs per token: 12 a d x (s / 2) per full layer, 12 a d x the mean
  // band (w s - w (w - 1) / 2) / s per windowed one.
  const double s = 16384, w = 1024, ad = 4096;
  const double core_full = 12 * ad * s / 2 * 16, core_band = 12 * ad * (w * s - w * (w - 1) / 2) / s * 16;
  EXPECT_NEAR(workload::model_flops_per_token(job.model, true) -
                  workload::model_flops_per_token(windowed.model, true),
              core_full - core_band, 1e-6 * core_full);
  // The full-square convention (Megatron's) doubles both.
  EXPECT_NEAR(workload::model_flops_per_token(job.model) - workload::model_flops_per_token(windowed.model),
              2 * (core_full - core_band), 1e-6 * core_full);
  EXPECT_NEAR(
      workload::model_flops_per_token(alternating.model),
      (workload::model_flops_per_token(job.model) + workload::model_flops_per_token(windowed.model)) / 2,
      1e-6 * core_full);
}

// Megatron's DDP keeps the experts' gradients and parameters in their own buffer, reduced and
// gathered over the expert data-parallel group (TP x CP x DP / (EP x ETP) ranks: the ranks of a
// stage that hold the same experts), not over the dense one. 16 experts at EP 8 on 32
// single-GPU DP ranks (four nodes of 8): rank 0's experts are also held by ranks 8, 16 and 24,
// one on each node. Its reductions and its gather split into the dense share over all 32 ranks
// and the experts' over those four, the same bytes in all; the ZeRO-1 optimizer updates the
// dense shard of 1/32 and the experts' of 1/4 of its 1/8, so the same work as without EP (no
// expert parallelism: every rank holds every expert, sharded over all 32). At EP 16 on 16 ranks
// each expert has one copy: nothing of the experts' is reduced.
TEST(Replay, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
  auto job = small_moe_job();
  job.parallelism.data_parallel = 32;
  job.global_batch_size = 64;
  job.parallelism.expert_parallel = 8;
  const auto node = network::Cluster(small_cluster(4)).node();
  const auto compute = step_compute_model(job, node);
  const auto costs = block_costs(job, compute, node, CostParams{});
  ASSERT_GT(costs[0].expert_params_per_chunk, 0.0);
  ASSERT_LT(costs[0].expert_params_per_chunk, costs[0].params_per_chunk);
  const double grad_bytes = workload::stack_memory(job).grad_bytes;
  const StepProgram p = program_of(job);
  std::map<size_t, double> reduced, gathered;  // group size -> bytes of step 1
  for (const Instr& i : p.ranks.front().instrs) {
    if (i.kind != InstrKind::collective || i.step != 1) continue;
    const auto& g = p.groups[static_cast<size_t>(i.group)];
    if (g.gpus.size() == 4) {
      EXPECT_EQ(g.gpus, (std::vector<int>{0, 8, 16, 24}));
    }
    (i.collective == CollectiveKind::all_gather ? gathered : reduced)[g.gpus.size()] +=
        static_cast<double>(i.bytes);
  }
  ASSERT_EQ(reduced.size(), 2u);
  const double expert = costs[0].expert_params_per_chunk, dense = costs[0].params_per_chunk - expert;
  EXPECT_NEAR(reduced[32], dense * grad_bytes, 2.0);
  EXPECT_NEAR(reduced[4], expert * grad_bytes, 2.0);
  EXPECT_NEAR(gathered[32], dense * 2.0, 2.0);
  EXPECT_NEAR(gathered[4], expert * 2.0, 2.0);
  EXPECT_EQ(count(p, CollectiveKind::all_gather, 1), 2u);

  auto no_ep = job;
  no_ep.parallelism.expert_parallel = 1;
  const auto replicated = block_costs(no_ep, compute, node, CostParams{});
  EXPECT_NEAR(costs[0].optimizer_s, replicated[0].optimizer_s, 1e-12);
  const StepProgram q = program_of(no_ep);
  for (const Instr& i : q.ranks.front().instrs) {
    if (i.kind == InstrKind::collective) {
      EXPECT_EQ(q.groups[static_cast<size_t>(i.group)].gpus.size(), 32u);
    }
  }

  auto single = small_moe_job();
  single.parallelism.expert_parallel = 16;
  const auto one_copy = block_costs(single, compute, node, CostParams{});
  double bytes = 0.0;
  const StepProgram r = program_of(single);
  for (const Instr& i : r.ranks.front().instrs) {
    if (i.kind != InstrKind::collective || i.step != 1 || i.collective == CollectiveKind::all_gather)
      continue;
    EXPECT_EQ(r.groups[static_cast<size_t>(i.group)].gpus.size(), 16u);
    bytes += static_cast<double>(i.bytes);
  }
  EXPECT_NEAR(bytes, (one_copy[0].params_per_chunk - one_copy[0].expert_params_per_chunk) * grad_bytes, 2.0);

  // Every rank simulated (flow mode, unfolded): each rank reduces over its own expert group, and
  // the step agrees with the folded analytical one.
  const StepResult flow = run(job, 4, "flow", false), folded = run(job, 4, "analytical", true);
  EXPECT_EQ(flow.simulated_ranks, 32u);
  EXPECT_NEAR(flow.step_time_s, folded.step_time_s, 0.03 * folded.step_time_s);
}

// With context parallelism the data-parallel groups span DP x CP (Megatron's
// get_data_parallel_group(with_context_parallel=True), torchtitan's dp_shard x cp mesh), as the
// memory model shards: TP 2, CP 2, DP 8 on 32 GPUs; rank 0's gradient reduce-scatter and
// parameter all-gather run over the 16 ranks with TP index 0, in rank order (CP inside DP).
TEST(Replay, DataParallelGroupsSpanContextParallelRanks) {
  auto job = small_job(2, 1, 8, 1, 64);
  job.parallelism.context_parallel = 2;
  const StepProgram p = program_of(job);
  std::vector<int> expected;
  for (int r = 0; r < 32; r += 2) expected.push_back(r);
  size_t seen = 0;
  for (const Instr& i : p.ranks.front().instrs) {
    if (i.kind != InstrKind::collective) continue;
    EXPECT_EQ(p.groups[static_cast<size_t>(i.group)].gpus, expected);
    ++seen;
  }
  EXPECT_GT(seen, 2u);
  job.parallelism.context_parallel = 1;  // without CP: the 8 DP ranks of TP index 0, CP index 0
  job.parallelism.data_parallel = 16;
  const StepProgram q = program_of(job);
  for (const Instr& i : q.ranks.front().instrs) {
    if (i.kind == InstrKind::collective) {
      EXPECT_EQ(q.groups[static_cast<size_t>(i.group)].gpus.size(), 16u);
    }
  }
}

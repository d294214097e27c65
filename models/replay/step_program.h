// The step graph: per-rank programs of instructions with dependencies, built from the job's
// layout. The same form can come from a trace importer; the executor does not know which.
//
// A rank runs in-order streams: compute, pipeline p2p, data-parallel collectives, and (for
// imported traces) further collective streams, one per process group (collective_stream);
// an instruction starts when it heads its stream, the stream is idle and the instructions
// it waits for are done. Receives belong to no stream: they complete when the matching send
// is delivered. Collectives complete when every member has issued them and the transfers
// are done.
//
// Placement: global rank = tp + T (cp + C (dp + D pp)) for "tp-cp-dp-pp" (Megatron's
// default: TP innermost, inside a node), or tp + T (cp + C (pp + P dp)) for "tp-cp-pp-dp";
// rank r runs on GPU r. Per step and rank, following the pipeline schedule:
//   F(c, mb): waits for the activation of virtual stage c p + s - 1 (recv), then for the
//             parameter all-gather of chunk c from the previous step (ZeRO >= 1, first
//             micro-batch), runs, then sends its activation b s h 2 / t bytes to the next
//             virtual stage (scatter/gather: each TP rank sends its 1/t share on its rail).
//   B(c, mb): waits for the gradient from the next virtual stage, runs, sends to the previous.
//   Last B of chunk c: with overlap_grad_reduce it is split into the chunk's gradient
//             buckets, and each bucket's reduction over the DP group (DP x CP with context parallelism;
//             an MoE's experts over their own expert data-parallel group) (all-reduce for ZeRO 0,
//             reduce-scatter otherwise; fp32 gradients, 4 B/param) starts when its share
//             of the pass is done; without overlap the reductions follow the whole backward.
//             Gradient bytes per parameter are the stack's (fp32 4, DeepSpeed 16-bit 2).
//             ZeRO-2 keeps no full gradient, so every backward pass reduces its buckets.
//   Optimizer: after the reductions; then (ZeRO 1-2) the bf16 parameter all-gather per
//             chunk, which the next step's first forward of that chunk waits for
//             (overlap_param_gather), or the step end waits for (no overlap).
//   ZeRO-3 / FSDP (DeepSpeed stage 3, FSDP2 reshard_after_forward): every F and B pass is
//             split into one piece per layer (the FSDP unit); each piece waits for its bf16
//             parameter all-gather on the dp stream, which is issued when the piece two
//             before it is done (one unit of prefetch), and each backward piece is followed by
//             its gradient reduce-scatter (the stack's reduce precision) on a second stream
//             and communicator, so gathers and reductions overlap each other and compute.
//             With fewer tokens per GPU the same gathers stay and compute shrinks: the
//             published ZeRO-3 collapse at fixed global batch. torchtitan with PP keeps the
//             stage gathered instead: one gather per step, as ZeRO-1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/replay/block_costs.h"
#include "models/workload/model_spec.h"

namespace ct::replay {

enum class InstrKind : uint8_t { compute, send, recv, collective };
// Streams 0..2 as above; values from 4 are further in-order collective streams (a trace's
// other process groups, each on its own NCCL stream beside dp): collective_stream(k).
enum class Stream : uint8_t { compute = 0, p2p = 1, dp = 2, none = 3 };
inline constexpr int kExtraCollectiveStreams = 6;
inline constexpr size_t kStreamSlots = 4 + kExtraCollectiveStreams;  // index 3 (none) unused
// Collective stream k: dp for k = 0, then 4, 5, ...; k wraps past the last one.
inline Stream collective_stream(int k) {
  const int m = k % (1 + kExtraCollectiveStreams);
  return m == 0 ? Stream::dp : static_cast<Stream>(3 + m);
}
enum class Category : uint8_t { forward, backward, optimizer, step_end, pp, dp };
// Names of the codes above, in code order (the timeline table carries codes; Python names
// them from here through _core.timeline_codes()).
inline constexpr const char* kStreamNames[] = {"compute", "p2p", "dp"};
inline constexpr const char* kInstrKindNames[] = {"compute", "send", "recv", "collective"};
inline constexpr const char* kCategoryNames[] = {"forward", "backward", "optimizer", "step_end", "pp", "dp"};
enum class CollectiveKind : uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all };

struct Instr {
  InstrKind kind = InstrKind::compute;
  Stream stream = Stream::compute;
  Category category = Category::forward;
  CollectiveKind collective = CollectiveKind::all_reduce;
  int16_t step = 0;
  int16_t chunk = 0;
  int32_t peer = -1;        // send: receiving rank index; recv: sending rank index
  int32_t peer_instr = -1;  // send: the matching recv's index in the receiver's program
  int32_t group = -1;       // collective: index into StepProgram::groups
  int32_t after = -1;       // index (same rank) that must be done first
  int32_t after2 = -1;
  double seconds = 0.0;     // compute: duration at full speed
  double tp_seconds = 0.0;  // part of `seconds` that is exposed TP/EP/CP communication
  int64_t bytes = 0;        // send / collective payload (collective: per rank, nccl-tests sense)
  int64_t microbatch = 0;
};

struct RankProgram {
  int gpu = 0;    // global rank = GPU index
  int stage = 0;  // pipeline stage
  std::vector<Instr> instrs;
};

struct Group {
  std::vector<int> gpus;       // every member (global ranks)
  std::vector<int> simulated;  // members that have a program (indices into ranks)
  uint64_t hash = 0;           // collective::group_hash(gpus) once built (0: not computed)
};

struct Placement {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};

struct StepProgram {
  std::vector<RankProgram> ranks;
  std::vector<Group> groups;
  int steps = 1;
  bool folded = false;  // fewer ranks than GPUs: replicas (ProgramOptions::fold) or rails (fold_rails)
  // Rail fold: the GPUs each simulated rank stands for, its tensor-parallel group (1: none).
  int rail_fold = 1;
  // The compute model's steady ratio under the power limit (block_costs.h step_compute_model);
  // 0 = the per-kernel throttle, or a program imported from a trace.
  double steady_ratio = 0.0;
  [[nodiscard]] size_t instruction_count() const;
};

struct ProgramOptions {
  int steps = 3;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  // Pipeline sends run on their own stream (true), or block the compute stream until
  // delivered, as Megatron's batched p2p did before --overlap-p2p-communication (false).
  bool overlap_p2p = true;
  std::string placement = "tp-cp-dp-pp";
  double bucket_params = 0;  // DP gradient bucket in parameters (0 = max(40M, 1M x DP))
  // Fold: one DP replica and one TP rank per stage stand for all (identical) others.
  bool fold = false;
  // Rail fold (flow mode, scenario network.fold_rails): the ranks at TP index 0 stand for their
  // tensor-parallel groups; every other rank's program is the same on a rail of its own. Kept
  // only when every collective group of a simulated rank is made of simulated ranks (no MoE
  // expert group across TP indices); otherwise the program is built unfolded (rail_fold 1).
  bool fold_rails = false;
  // Physical GPU of each global rank (empty: rank r on GPU r). A placement that ignores the
  // topology (training_job.scheduling.topology_aware: false) shuffles whole nodes.
  std::vector<int> gpu_of_rank;
};

int global_rank(const workload::ParallelSpec& p, const Placement& at, const std::string& order);
// Steps the program holds: options.steps, or with the replica fold at most kFoldedSteps. The
// fold runs only without contention and perturbation; there the ranks end the second step in
// the state they ended the first, shifted in time, so every later step repeats the second (the
// 486 analytical scenarios of `clustertwin accuracy`: steps 3 and 5 within 3e-12 of step 2) and
// the second is the steady step the report gives. The first is the cold one (pipeline filled
// from idle ranks: up to 19% off).
inline constexpr int kFoldedSteps = 2;
int simulated_steps(const ProgramOptions& options);
// Whether build_step_program folds rails for these options: fold_rails asked, no replica fold,
// TP > 1 and an unshuffled placement (a TP group's GPUs follow its first one). The program it
// builds can still come out unfolded (a group across TP indices: StepProgram::rail_fold).
bool folds_rails(const workload::ParallelSpec& p, const ProgramOptions& options);
Placement placement_of(const workload::ParallelSpec& p, int rank, const std::string& order);

StepProgram build_step_program(const workload::JobSpec& job, const std::vector<StageCosts>& costs,
                               const ProgramOptions& options);

// Instructions a program of this job would have (all ranks, all steps), without building it.
double estimate_program_instructions(const workload::JobSpec& job, const ProgramOptions& options);
// Bytes a program of this job would take, without building it (for failing fast).
double estimate_program_bytes(const workload::JobSpec& job, const ProgramOptions& options);

}  // namespace ct::replay

// Executes a StepProgram on one Simulation: per-rank streams, p2p transfers and collectives
// on the network, and the slowdown of compute while communication kernels run.
//
// Compute/communication contention: while a rank has at least one communication kernel
// in flight (a send, or a collective from the moment the rank issues it), its compute runs
// at rate 1 - slowdown, slowdown = comm_sms / sm_count (NCCL takes one SM per channel).
// A running block keeps its remaining full-speed work w; when the rate changes at time t,
// w -= (t - t_last) x rate_old and its completion is re-dated to t + w / rate_new.
//
// Attribution of a rank's time (its compute stream is always either busy or waiting):
//   busy          -> compute_s, exposed_tp_comm_s (the TP share of the block), optimizer_s
//   waiting on a receive whose send was issued at t_s, from t_w to arrival t_a:
//                    bubble = [t_w, min(t_s, t_a)],  exposed_pp_comm = [max(t_w, t_s), t_a]
//   waiting on a DP collective -> exposed_dp_comm_s;   anything else -> other_s.
// Step k of a rank ends when its step_end instruction completes.
//
// Stopped ranks (node_kill, hang faults): a rank stops at `at_s`. A crash (node_kill) takes
// its running kernel and every transfer and collective it is part of with it: nothing it
// sends or joins completes after at_s. A hang (the process lives but issues no more work)
// lets what it already launched finish and starts nothing new. Peers block in their next
// collective or receive that needs the rank; the run ends when no event is left, and
// ExecutionResult::stall says where every rank waits.
//
// Kernel jitter (kernel_jitter_cv = c > 0): every compute block (not step_end markers) runs
// for its time times a log-normal factor of mean 1 and coefficient of variation c,
//   f = exp(mu + sigma Z),  sigma^2 = ln(1 + c^2),  mu = -sigma^2 / 2,
// drawn from the rank's own stream sim::Rng(jitter_seed, kJitterStream + rank) in the rank's
// instruction order, so it does not depend on event interleaving.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/replay/step_program.h"
#include "sim/rng.h"
#include "sim/simulation.h"
#include "sim/trace_writer.h"

namespace ct::replay {

// The replay's view of communication; an adapter maps it onto network + collectives.
class CommHandler {
 public:
  virtual void on_comm_done(uint64_t tag) = 0;

 protected:
  ~CommHandler() = default;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual void send(int src_gpu, int dst_gpu, sim::Bytes bytes, CommHandler& handler, uint64_t tag) = 0;
  // group_hash: the group's collective::group_hash when the program keeps it (Group::hash),
  // else 0.
  virtual void collective(CollectiveKind kind, std::span<const int> gpus, sim::Bytes bytes,
                          CommHandler& handler, uint64_t tag, uint64_t group_hash) = 0;
};

struct TimeBreakdown {
  double compute_s = 0, exposed_tp_comm_s = 0, exposed_pp_comm_s = 0, exposed_dp_comm_s = 0, bubble_s = 0,
         optimizer_s = 0, other_s = 0;
  double straggler_s = 0;  // expected wait for the slowest worker (step_model.h), not simulated
  TimeBreakdown& operator+=(const TimeBreakdown& o);
  [[nodiscard]] double total() const;
};

struct CollectiveRecord {
  CollectiveKind kind;
  int group_size;
  int64_t bytes;
  double start_s, end_s;
};

// Every timed instruction of the traced ranks (the Chrome trace's rows), as
// columns: GPU, stream, InstrKind, Category, step, start and duration (seconds).
struct Timeline {
  std::vector<int64_t> gpu, stream, kind, category, step;
  std::vector<double> start_s, seconds;
};

struct RankStop {
  int32_t rank = 0;  // program rank
  double at_s = 0;
  bool crash = true;       // false: a hang
  int32_t node_stop = -1;  // the caller's own index (step_model: which NodeStop)
};

struct ExecutorOptions {
  double comm_slowdown = 0.06;      // compute rate loss while communication runs
  std::vector<double> rank_speed;   // per program rank, 1 = nominal (gpu_throttle faults)
  std::vector<double> rank_weight;  // GPUs each program rank stands for (folding); 1 = itself
  // Timeline of the traced ranks: every timed instruction as a slice with its args (step,
  // micro-batch, chunk, bytes, peer), and a flow arrow from each pipeline send to the pass of
  // the receiver that starts next, when both ranks are traced.
  sim::TraceWriter* trace = nullptr;
  Timeline* timeline = nullptr;  // the same as columns
  // Which program ranks are traced: traced[r] != 0; ranks past the end are not.
  std::vector<uint8_t> traced;
  double busy_bucket_s = 100e-6;  // resolution of ExecutionResult::busy_gpus
  bool track_busy = true;         // false: busy_gpus stays empty (nothing reads it)
  // busy_gpus from the bucket in which the first rank finished step busy_from_step - 1 on (the
  // window of the steps from busy_from_step can start no earlier); 0: from the start.
  int busy_from_step = 0;
  double kernel_jitter_cv = 0.0;  // log-normal noise on every compute block (0 = none)
  uint64_t jitter_seed = 1;
  // Stop the simulation once every instruction of every rank has completed (runs with timed
  // faults, whose end may lie beyond the work).
  bool stop_when_done = false;
  std::vector<RankStop> stops;
};

constexpr uint64_t kJitterStream = 0x4a495454ULL << 32;  // "JITT" << 32

struct RankResult {
  int gpu = 0;
  std::vector<double> step_end_s;  // per step
  TimeBreakdown last_step;         // attribution within the last step's window
  double last_step_compute_s = 0;  // busy compute in the last step (for slow-rank detection)
};

// Where one rank stands when the run stalled (nothing left to run, work left undone).
struct RankWait {
  enum class State : uint8_t { finished, waiting, killed, hung };
  int gpu = 0;
  State state = State::finished;
  std::string waiting_in;  // instruction name (dp_reduce_scatter, pp_recv, ...); "" if none
  int32_t group = -1;      // collective: index into StepProgram::groups
  int64_t seq = -1;        // collective: how many of this group's collectives the rank completed
  int step = -1;
  int64_t bytes = 0;
  double since_s = 0;        // when it entered what it waits in
  std::vector<int> missing;  // GPUs that never joined (collective) or never sent (receive)
  // GPUs in the same group waiting in a different collective of it (another kind or sequence
  // number): mismatched collectives rather than a missing rank.
  std::vector<int> mismatched;
};

struct Stall {
  std::vector<RankWait> ranks;  // every simulated rank, in program order
  // Earliest time a rank that was not stopped entered what it never left (the first
  // collective watchdog to start counting); infinity when no such rank waits.
  double first_wait_s = 0;
  double last_progress_s = 0;  // the last instruction completed
  // Per RankStop, whether the rank still had work when it stopped (a stop after its last
  // instruction changes nothing).
  std::vector<bool> stop_acted;
  // Members (GPUs) of every group some rank waits in, by group index.
  std::map<int32_t, std::vector<int>> groups;
};

// The network failed a transfer for good (network::NoPathError): the run stopped there.
struct CommError {
  double time_s = 0;
  int src_gpu = 0, dst_gpu = 0;
  std::string message;
  // A new transfer found no path when it started (its retransmissions then give up one
  // timeout later), rather than a transfer in flight after its retransmission timeout.
  bool at_start = false;
};

struct ExecutionResult {
  std::vector<RankResult> ranks;
  std::vector<CollectiveRecord> collectives;  // the last step's
  // Mean number of GPUs running compute in each bucket of busy_bucket_s (power, swings).
  std::vector<double> busy_gpus;
  size_t busy_first_bucket = 0;  // the bucket busy_gpus[0] is (ExecutorOptions::busy_from_step)
  double busy_bucket_s = 0;
  uint64_t events = 0;
  std::optional<Stall> stall;           // set when work was left undone
  std::optional<CommError> comm_error;  // set when the network aborted the run (stall too)
};

ExecutionResult execute(const StepProgram& program, sim::Simulation& sim, Communicator& comm,
                        const ExecutorOptions& options);

const char* state_name(RankWait::State state);
// One line for an error: "replay stalled: " and where the first waiting rank waits.
std::string stall_message(const Stall& stall);

}  // namespace ct::replay

// Trace import: recorded steps -> replay::StepProgram, and a runner that replays one on a
// cluster. Parsers live in chakra.cpp (Chakra protobuf) and kineto.cpp (PyTorch profiler JSON);
// each states its rules at its top. Every error is a TraceError whose message starts with
// "trace.path: " (or "trace.execution_trace: ") and names the file.
//
// The programs use the executor's vocabulary only (compute/send/recv/collective, its
// streams, `after`/`after2`), with two conventions the executor has no words for yet:
//   * join: a zero-second compute instruction with Category::step_end on the compute stream,
//     used to wait for more than two instructions (chained two at a time);
//   * idle: a compute instruction with Category::step_end and seconds > 0 stands for time the
//     GPU sat idle in the trace (CPU-bound gaps). The executor adds nothing for it to compute_s
//     (step_end is not attributed), so it lands in "other" in step_model-style accounting, but it
//     is counted as busy in ExecutionResult::busy_gpus and it scales with rank_speed.
// Every rank ends with one zero-second Category::step_end instruction after all others, so
// RankResult::step_end_s[0] is the rank's replayed step time. steps == 1 -- except for a
// Chakra trace written by chakra_export.h, which carries its steps' own step_end instructions
// (steps >= 1, as the step model built them).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "models/collective/collective.h"
#include "models/network/cluster.h"
#include "models/network/link_table.h"
#include "models/network/network.h"
#include "models/network/packet_network.h"
#include "models/replay/executor.h"
#include "models/replay/step_program.h"
#include "sim/trace_writer.h"

namespace ct::trace {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Limits every importer applies: a recorded step (or one rank's durations) of more than an
// hour is not a step -- the executor keeps GPU activity in time buckets, so replayed time
// costs memory --, and no message exceeds 1 TiB.
inline constexpr double kMaxStepSeconds = 3600;
inline constexpr int64_t kMaxMessageBytes = int64_t{1} << 40;

// ---- Chakra (ASTRA-sim execution traces) -------------------------------------------------

// The Chakra schema version this build reads and writes (GlobalMetadata.version).
inline constexpr const char* kChakraVersion = "0.0.4";

struct ChakraStats {
  int ranks = 0;
  int nodes = 0;                  // Chakra nodes over all ranks
  int collectives = 0;            // collective instances (groups of matching nodes)
  int all_to_all = 0;             // of which all-to-all, decomposed into sends
  int measured_broadcasts = 0;    // broadcast nodes run for their duration_micros (as ASTRA-sim)
  int point_to_point = 0;         // matched send/recv pairs from COMM_SEND/COMM_RECV nodes
  int computes = 0;               // COMP nodes
  int memory = 0;                 // MEM_LOAD / MEM_STORE nodes
  int steps = 1;                  // steps the trace carries (step_end nodes of a ClusterTwin export)
  int64_t dropped_ctrl_deps = 0;  // control dependencies on nodes not in the file (dropped)
  std::string name;               // the <name> of <name>.<rank>.et
};

struct ChakraOptions {
  // A MEM_LOAD / MEM_STORE node without a duration moves its tensor_size bytes at this rate
  // (ASTRA-sim's remote memory: the scenario runner passes the node's GPU<->host PCIe rate);
  // 0 makes such a node an error.
  double memory_bytes_per_s = 0;
};

// Reads every <name>.<rank>.et in `directory` (ranks 0..N-1, one name). Throws TraceError.
replay::StepProgram import_chakra(const std::string& directory, ChakraStats* stats = nullptr,
                                  const ChakraOptions& options = {});
// The same from memory: rank_files[r] = (file name used in errors, its bytes); `where` names
// the whole set in errors that concern several ranks.
replay::StepProgram import_chakra_bytes(const std::string& where,
                                        const std::vector<std::pair<std::string, std::string>>& rank_files,
                                        ChakraStats* stats = nullptr, const ChakraOptions& options = {});

// ---- Kineto (PyTorch profiler) ------------------------------------------------------------

struct KinetoOptions {
  // Keep the time the GPU idles between kernels (CPU-bound launch gaps) as idle instructions;
  // false replays GPU-busy time only.
  bool keep_idle_gaps = true;
  int device = -1;  // GPU to import; -1 = the only one in the trace (error if several)
  // ProfilerStep#N to replay (trace.step); -1 = the last one that launched GPU work.
  int64_t step = -1;
  // PyTorch execution trace of the same step: only checked here (readable, with "nodes");
  // import_pytorch_et (pytorch_et.h) builds the step graph from it. Empty = none.
  std::string execution_trace;
};

struct KinetoStats {
  int kernels = 0, memsets = 0, memcpys = 0, nccl_kernels = 0;
  int forward = 0, backward = 0, optimizer = 0;  // GPU events by category
  int streams = 0;
  double gpu_busy_s = 0;       // sum of GPU event durations
  double span_s = 0;           // first GPU event start to last GPU event end
  double idle_s = 0;           // time inside the span with no GPU event running
  double overlap_s = 0;        // time GPU events of different streams overlapped (kept in the replay)
  int et_nodes = 0;            // nodes of the execution trace, when given
  int64_t profiler_step = -1;  // the ProfilerStep#N replayed, -1 when the trace has none
  int profiler_steps = 0;      // ProfilerStep annotations in the trace
  int empty_steps = 0;         // of them, without GPU work (not chosen)
  // Time the step's first events ran beside the previous step's GPU work (a prefetch copy
  // launched early): outside the step's period, not replayed.
  double before_step_s = 0;
};

// One-rank program (GPU 0) from the GPU events of the profiled step. Throws TraceError.
replay::StepProgram import_kineto(const std::string& trace_path, const KinetoOptions& options = {},
                                  KinetoStats* stats = nullptr);

// ---- Kineto, one file per rank (kineto_ranks.cpp) ----------------------------------------

struct KinetoRanksStats {
  int ranks = 0;
  int collectives = 0;         // collective instances (matched across their groups)
  int nccl_kernels = 0;        // NCCL kernels replayed as collectives, all ranks
  int nccl_measured = 0;       // NCCL kernels kept at their measured time (batched p2p, broadcast, ...)
  int point_to_point = 0;      // matched send/recv pairs replayed as transfers
  double measured_p2p_s = 0;   // measured time of their kernels, all ranks
  int kernels = 0;             // events on the compute streams, all ranks
  int waits = 0;               // compute events that wait for a collective
  double measured_nccl_s = 0;  // measured time of the replayed NCCL kernels, all ranks
  double measured_step_s = 0;  // the longest rank's measured GPU span
  double idle_s = 0;           // idle kept on the compute streams, all ranks
  double overlap_s = 0;        // compute events of different streams that overlapped (kept in the replay)
};

// Every *.json / *.json.gz in `directory`, one per rank (distributedInfo). Throws TraceError.
// step: the ProfilerStep#N to replay on every rank (-1 = each rank's last one with GPU work).
replay::StepProgram import_kineto_ranks(const std::string& directory, KinetoRanksStats* stats = nullptr,
                                        int64_t step = -1);

// ---- Running -----------------------------------------------------------------------------

struct TraceRunOptions {
  network::NetworkParams network;
  network::PacketParams packet;  // network mode packet: ECN, PFC, DCQCN, MTU, buffers
  collective::CollectiveParams collectives;
  sim::TraceWriter* trace = nullptr;  // Chrome trace of trace_gpus, or of the first trace_ranks ranks
  int trace_ranks = 16;
  std::vector<int> trace_gpus;
  uint64_t seed = 1;
  // Resolution of ExecutionResult::busy_gpus. The executor fills one bucket per interval of
  // replayed time, so a trace of minutes at the step model's 100 us costs seconds and
  // megabytes; the trace report does not use the series.
  double busy_bucket_s = 10e-3;
  bool fabric_links = false;             // fill TraceRunResult::fabric_links
  replay::Timeline* timeline = nullptr;  // the traced ranks' instructions as columns
  // A program that stalls (work left that can never run): false throws std::runtime_error
  // with replay::stall_message; true returns with execution.stall set and step_time_s 0.
  bool report_stall = false;
};

struct TraceRunResult {
  replay::ExecutionResult execution;
  network::FabricLinkTable fabric_links;  // every fabric link direction's load (link_table.h)
  // The latest rank's end of the step; for a program of several steps (a ClusterTwin export
  // of a training step), the last one as the step model counts it: end(last) - end(last - 1),
  // the latest rank's end each time.
  double step_time_s = 0;
  std::optional<network::PacketStats> packet;  // network mode packet
};

// Replays an imported program on a cluster (rank r on GPU program.ranks[r].gpu) with the
// given network mode ("analytical", "flow", "packet") and NCCL-like collectives. Throws
// TraceError when the program needs more GPUs than the cluster has.
TraceRunResult run_trace_program(const replay::StepProgram& program, const network::ClusterSpec& cluster,
                                 const std::string& network_mode, const TraceRunOptions& options = {});

}  // namespace ct::trace

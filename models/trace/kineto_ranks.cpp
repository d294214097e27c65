// PyTorch profiler (Kineto) traces of a multi-rank job, one file per rank -> replay::StepProgram
// whose NCCL collectives run on the simulated fabric instead of at their measured time.
//
// Files: every *.json and *.json.gz in the directory. The rank is the file's
// distributedInfo.rank; every file's distributedInfo.world_size must equal the number of
// files, and ranks 0..N-1 appear once each. Rank r runs on GPU r.
// Per rank, the step's GPU events (kineto::step_window: trace.step's ProfilerStep, the last one with GPU
// work, or all) split in:
//   * Collectives: NCCL kernels with record_param_comms arguments (on the kernel event, or on
//     the record_param_comms operator its launch call ran in). "Collective name"
//     (lower case, '_' dropped) starting with allreduce, allgather, reducescatter or alltoall
//     gives the kind; the payload is the nccl-tests buffer per rank,
//       bytes = max("In msg nelems", "Out msg nelems") x size of "dtype";
//     the group is "Process Group Ranks" (global ranks; when truncated with "...", every rank
//     if "Group size" is the world size, else an error). The k-th collective of a process
//     group (name and ranks) on each member is one instance: kind and bytes must agree and
//     every member must have it. Each process group's collectives run in measured start
//     order on their own collective stream (replay::collective_stream, in order of first
//     appearance), so groups whose kernels interleave differently on different ranks do not
//     block one another.
//   * Other GPU events, NCCL kernels without those arguments or of other kinds (send/recv,
//     broadcast, ...) included, run in start order on the compute stream at their measured
//     time, less the part that overlapped earlier events of other streams (as import_kineto:
//     the measured concurrency is kept); a kept NCCL kernel counts as exposed communication
//     (tp_seconds) and in KinetoRanksStats::nccl_measured.
//   * Point to point: "send" / "recv" kernels whose arguments name the peer ("Dst Rank" /
//     "Src Rank", global ranks) are transfers on the fabric: a send on the p2p stream, its
//     receive completing when the data arrives; the k-th send from s to d pairs with the k-th
//     receive on d from s (counts and sizes must agree). Batched ones (no peer) stay measured.
// Dependencies, from the measured timeline:
//   * A collective or a send waits for the compute event launched last before it
//     (cudaLaunchKernel order): PyTorch orders the NCCL stream after the current stream.
//   * A compute event e waits for every collective and receive that ended (measured) in
//     (end of the compute stream's previous event, start of e]: the stream was idle until then
//     (work.wait()); more than one are joined (trace_import.h).
//   * Idle: the rest of the measured gap before e, start_e - max(end_prev, the last of those
//     ends), stays as an idle instruction after the wait (CPU launch time).
// A collective's time is the collective engine's on the cluster, not the measured kernel
// time (which includes waiting for the slowest peer); both are reported.
// Step end: after the compute stream, the last collective of each collective stream, the last
// send and every receive.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "models/trace/kineto_events.h"
#include "models/trace/op_view.h"
#include "models/trace/program_build.h"
#include "models/trace/trace_import.h"
#include "sim/input_limits.h"

namespace ct::trace {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using replay::Category;
using replay::CollectiveKind;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

constexpr const char* kKey = "trace.path";

struct Collective {
  CollectiveKind kind = CollectiveKind::all_reduce;
  int64_t bytes = 0;
  std::string group_key;  // "<pg name>:<ranks>"
  std::vector<int> ranks;
};

std::string where(const std::string& file, const kineto::GpuEvent& e) {
  return std::string(kKey) + ": " + file + ": NCCL kernel '" + e.name + "' at ts " + std::to_string(e.ts);
}

std::string arg_text(const json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int64_t arg_count(const json& args, const char* key, const std::string& at) {
  const auto it = args.find(key);
  if (it == args.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    throw TraceError(at + ": \"" + key + "\" is " + (it == args.end() ? "missing" : it->dump()) +
                     ", expected a non-negative integer");
  }
  return it->get<int64_t>();
}

int64_t dtype_bytes(const std::string& dtype, const std::string& at) {
  static const std::map<std::string, int64_t> sizes = {
      {"Byte", 1},  {"Char", 1},   {"Bool", 1},         {"Float8_e5m2", 1},   {"Float8_e4m3fn", 1},
      {"Short", 2}, {"Half", 2},   {"BFloat16", 2},     {"Int", 4},           {"Float", 4},
      {"Long", 8},  {"Double", 8}, {"ComplexFloat", 8}, {"ComplexDouble", 16}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end()) throw TraceError(at + ": dtype '" + dtype + "' is not a known tensor type");
  return it->second;
}

// "[0, 1, 2]" (or a JSON array) -> ranks; empty with truncated set when the list has "...".
std::vector<int> parse_ranks(const json& args, int64_t world, const std::string& at) {
  const std::string text = arg_text(args, "Process Group Ranks");
  const auto group_size = args.find("Group size");
  const bool whole_world =
      group_size != args.end() && group_size->is_number_integer() && group_size->get<int64_t>() == world;
  if (text.find("...") != std::string::npos || text.empty()) {
    if (!whole_world) {
      throw TraceError(at + ": \"Process Group Ranks\" is " +
                       (text.empty() ? "missing" : "truncated ('" + text + "')") +
                       " and \"Group size\" is not the world size " + std::to_string(world));
    }
    std::vector<int> all(static_cast<size_t>(world));
    for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
    return all;
  }
  std::vector<int> ranks;
  std::string number;
  for (const char c : text + ",") {
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      number += c;
    } else if (c == ',' || c == ']') {
      if (number.empty()) continue;
      if (number.size() > 9 || std::stoll(number) >= world) {
        throw TraceError(at + ": \"Process Group Ranks\" '" + text + "' names rank " + number +
                         ", outside 0.." + std::to_string(world - 1));
      }
      ranks.push_back(std::stoi(number));
      number.clear();
    } else if (c != '[' && c != ' ') {
      throw TraceError(at + ": \"Process Group Ranks\" '" + text + "' is not a list of ranks");
    }
  }
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (ranks.empty() || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw TraceError(at + ": \"Process Group Ranks\" '" + text + "' is empty or repeats a rank");
  }
  if (group_size != args.end() && (!group_size->is_number_integer() ||
                                   group_size->get<int64_t>() != static_cast<int64_t>(ranks.size()))) {
    throw TraceError(at + ": \"Group size\" " + group_size->dump() + " differs from the " +
                     std::to_string(ranks.size()) + " ranks listed");
  }
  return ranks;
}

// The collective an NCCL kernel runs, or false for one kept at its measured time.
// The record_param_comms operators of a trace, per CPU thread, by start.
class CommOps {
 public:
  explicit CommOps(const kineto::KinetoTrace& t) : trace_(t) {
    for (const kineto::CpuOp& op : t.ops) {
      if (op.name == "record_param_comms" && op.args != nullptr) by_thread_[op.tid].emplace(op.ts, &op);
    }
  }
  // The args of the record_param_comms operator running when `e` was launched, or null.
  [[nodiscard]] const json* around_launch_of(const kineto::GpuEvent& e) const {
    const auto l = trace_.launches.find(e.correlation);
    if (l == trace_.launches.end()) return nullptr;
    const auto thread = by_thread_.find(l->second.tid);
    if (thread == by_thread_.end()) return nullptr;
    auto it = thread->second.upper_bound(l->second.ts);
    if (it == thread->second.begin()) return nullptr;
    const kineto::CpuOp& op = *std::prev(it)->second;
    return l->second.ts <= op.ts + op.dur ? op.args : nullptr;
  }

 private:
  const kineto::KinetoTrace& trace_;
  std::map<int64_t, std::multimap<double, const kineto::CpuOp*>> by_thread_;
};

// The communication arguments of an NCCL kernel: its own, or (profilers that do not copy them
// to the kernel) those of the record_param_comms operator its launch ran in; null if neither.
const json* comm_args_of(const kineto::GpuEvent& e, const CommOps& comm_ops) {
  if (!kineto::is_nccl(e.name)) return nullptr;
  return e.args != nullptr && e.args->contains("Collective name") ? e.args : comm_ops.around_launch_of(e);
}

// "Collective name" in lower case without '_'.
std::string comm_name(const json& args) {
  std::string name;
  for (const char c : arg_text(args, "Collective name")) {
    if (c != '_') name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return name;
}

// max(In, Out msg nelems) x the dtype's size (the nccl-tests buffer per rank).
int64_t message_bytes(const json& args, const std::string& at) {
  const int64_t elements =
      std::max(arg_count(args, "In msg nelems", at), arg_count(args, "Out msg nelems", at));
  const int64_t element = dtype_bytes(arg_text(args, "dtype"), at);
  if (elements > kMaxMessageBytes / element) throw TraceError(at + ": the message exceeds 1 TiB");
  return elements * element;
}

struct PointToPoint {
  bool send = false;
  int peer = -1;  // global rank: "Dst Rank" of a send, "Src Rank" of a recv
  int64_t bytes = 0;
};

// A send or recv kernel that names its peer, or false.
bool p2p_of(const kineto::GpuEvent& e, int64_t world, const std::string& file, const CommOps& comm_ops,
            PointToPoint& out) {
  const json* args = comm_args_of(e, comm_ops);
  if (args == nullptr) return false;
  const std::string name = comm_name(*args);
  if (name != "send" && name != "recv") return false;
  out.send = name == "send";
  const char* key = out.send ? "Dst Rank" : "Src Rank";
  if (!args->contains(key)) return false;
  const std::string at = where(file, e);
  const int64_t peer = arg_count(*args, key, at);
  if (peer >= world)
    throw TraceError(at + ": \"" + key + "\" " + std::to_string(peer) + " is outside 0.." +
                     std::to_string(world - 1));
  out.peer = static_cast<int>(peer);
  out.bytes = message_bytes(*args, at);
  return true;
}

// PyTorch <= 2.1 records record_param_comms without "Collective name" and sizes: the kind then
// comes from the NCCL kernel's name (ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_AllGather_...), the bytes from the operator's first input ("Input Dims" x
// "Input type", an all-gather's input being one rank's share), and the group is every rank (the
// trace names none). False when the kernel is none of those or the input is not one tensor
// (a TensorList without dims): the kernel is then kept at its measured time.
bool legacy_collective(const kineto::GpuEvent& e, const json& args, int64_t world, Collective& out) {
  if (args.contains("Collective name")) return false;
  const std::pair<const char*, CollectiveKind> kinds[] = {
      {"_AllReduce_", CollectiveKind::all_reduce},
      {"_AllGather_", CollectiveKind::all_gather},
      {"_ReduceScatter_", CollectiveKind::reduce_scatter}};
  const auto kind = std::find_if(std::begin(kinds), std::end(kinds),
                                 [&](const auto& k) { return e.name.find(k.first) != std::string::npos; });
  if (kind == std::end(kinds)) return false;
  const auto dims = args.find("Input Dims");
  const auto types = args.find("Input type");
  if (dims == args.end() || types == args.end() || !dims->is_array() || !types->is_array() || dims->empty() ||
      types->empty() || !(*dims)[0].is_array() || (*dims)[0].empty() || !(*types)[0].is_string()) {
    return false;
  }
  const int64_t element = dtype_size((*types)[0].get<std::string>());
  if (element == 0) return false;
  int64_t elements = 1;
  for (const json& d : (*dims)[0]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || elements > kMaxMessageBytes) return false;
    elements *= std::max<int64_t>(1, d.get<int64_t>());
  }
  if (kind->second == CollectiveKind::all_gather) elements *= world;
  if (elements > kMaxMessageBytes / element) return false;
  out.kind = kind->second;
  out.bytes = elements * element;
  out.ranks.resize(static_cast<size_t>(world));
  for (size_t r = 0; r < out.ranks.size(); ++r) out.ranks[r] = static_cast<int>(r);
  out.group_key = "(all ranks, legacy record_param_comms):";
  return true;
}

bool collective_of(const kineto::GpuEvent& e, int64_t world, const std::string& file, const CommOps& comm_ops,
                   Collective& out) {
  const json* found = comm_args_of(e, comm_ops);
  if (found == nullptr) return false;
  const json& args = *found;
  if (legacy_collective(e, args, world, out)) return true;
  const std::string name = comm_name(args);
  if (name.rfind("allreduce", 0) == 0) {
    out.kind = CollectiveKind::all_reduce;
  } else if (name.rfind("allgather", 0) == 0) {
    out.kind = CollectiveKind::all_gather;
  } else if (name.rfind("reducescatter", 0) == 0) {
    out.kind = CollectiveKind::reduce_scatter;
  } else if (name.rfind("alltoall", 0) == 0) {
    out.kind = CollectiveKind::all_to_all;
  } else {
    return false;
  }
  const std::string at = where(file, e);
  out.bytes = message_bytes(args, at);
  out.ranks = parse_ranks(args, world, at);
  out.group_key = arg_text(args, "Process Group Name") + ":";
  for (const int r : out.ranks) out.group_key += std::to_string(r) + ",";
  return true;
}

// What the program needs of one GPU event; the parsed trace is dropped after each file.
struct StepEvent {
  double ts = 0, dur = 0, launch = 0;  // us; launch: its launch call (ts when absent)
  kineto::Phase phase = kineto::Phase::forward;
  bool nccl = false;
  int instance = -1;  // collective instance, -1 for the compute stream
  PointToPoint p2p;   // a send or recv when p2p.peer >= 0
};

struct RankFile {
  std::string path;
  std::vector<StepEvent> events;
};

// An instruction index standing for "all of `deps` done" (-1 for none).
int32_t join_all(replay::RankProgram& rank, std::vector<int32_t> deps) {
  deps = join_down(rank.instrs, std::move(deps), 1);
  return deps.empty() ? -1 : deps[0];
}

// Phase 1: the trace files of the directory, sorted, within the trace_ranks limit.
std::vector<std::string> rank_files(const std::string& directory) {
  std::vector<std::string> paths;
  std::error_code ec;
  fs::directory_iterator entry(directory, ec);
  for (; !ec && entry != fs::directory_iterator(); entry.increment(ec)) {
    const std::string name = entry->path().filename().string();
    const auto ends = [&](const std::string& suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    std::error_code type_ec;
    if (entry->is_regular_file(type_ec) && (ends(".json") || ends(".json.gz")))
      paths.push_back(entry->path().string());
  }
  if (ec) throw TraceError(std::string(kKey) + ": " + directory + ": " + ec.message());
  if (paths.empty())
    throw TraceError(std::string(kKey) + ": " + directory + ": no .json or .json.gz Kineto traces");
  std::sort(paths.begin(), paths.end());
  try {
    sim::check_input_limit("trace_ranks", std::string(kKey) + ": " + directory,
                           static_cast<int64_t>(paths.size()));
  } catch (const sim::InputLimitError& e) {
    throw TraceError(e.what());
  }
  return paths;
}

// Collective instances: the k-th collective of each process group on each member.
struct Instances {
  std::map<std::pair<std::string, int>, int> index;
  std::vector<Collective> list;
  std::vector<std::vector<int>> members;           // per instance: ranks that issued it
  std::vector<std::pair<int, double>> first_seen;  // per instance: (rank, ts) of the first member, for errors

  // The instance the `k`-th collective `c` of its group on `rank` belongs to (k counted in `seq`).
  int add(const Collective& c, int rank, double ts, std::map<std::string, int>& seq, const std::string& at) {
    const std::pair<std::string, int> key{c.group_key, seq[c.group_key]++};
    auto [it, fresh] = index.emplace(key, static_cast<int>(list.size()));
    if (fresh) {
      list.push_back(c);
      members.emplace_back();
      first_seen.emplace_back(rank, ts);
    } else if (list[static_cast<size_t>(it->second)].kind != c.kind ||
               list[static_cast<size_t>(it->second)].bytes != c.bytes) {
      throw TraceError(at + ": collective #" + std::to_string(key.second) +
                       " of its process group differs in kind or size from rank " +
                       std::to_string(first_seen[static_cast<size_t>(it->second)].first) + "'s");
    }
    members[static_cast<size_t>(it->second)].push_back(rank);
    return it->second;
  }
};

// Phase 2: one rank's file parsed to the step's events, its collectives matched to instances.
// Returns the rank; `seen` guards against two files of one rank.
size_t read_rank(const std::string& p, const std::string& directory, int64_t n, int64_t step,
                 std::vector<bool>& seen, std::vector<RankFile>& files, Instances& instances) {
  const kineto::KinetoTrace t = kineto::read_kineto(p, kKey);
  if (t.rank < 0 || t.world_size < 0) {
    throw TraceError(
        std::string(kKey) + ": " + p +
        ": no distributedInfo.rank and world_size (one file per rank of a torch.distributed job)");
  }
  if (t.world_size != n) {
    const bool subset = t.world_size > n;
    throw TraceError(
        std::string(kKey) + ": " + p + ": distributedInfo.world_size is " + std::to_string(t.world_size) +
        " but " + directory + " holds " + std::to_string(n) + " traces" +
        (subset ? ": a subset of the job's ranks. A collective needs every member, so the fabric cannot be "
                  "simulated without the others' traces; to replay what is here, point trace.path at one "
                  "rank's file (a single-rank replay keeps its NCCL kernels at their measured time, which is "
                  "the other ranks' communication as it was), or collect all " +
                      std::to_string(t.world_size) + " ranks' traces (torch.profiler on every rank)"
                : ""));
  }
  if (t.rank >= n || seen[static_cast<size_t>(t.rank)]) {
    throw TraceError(std::string(kKey) + ": " + p + ": distributedInfo.rank " + std::to_string(t.rank) +
                     (t.rank >= n ? " is outside 0.." + std::to_string(n - 1) : " appears in two files"));
  }
  const auto r = static_cast<size_t>(t.rank);
  seen[r] = true;
  RankFile& file = files[r];
  file.path = p;
  const kineto::PhaseOf phase_of(t);
  const CommOps comm_ops(t);
  std::map<std::string, int> seq;
  for (const kineto::GpuEvent& e : kineto::step_window(t, -1, step, p, kKey).events) {
    const auto l = t.launches.find(e.correlation);
    StepEvent ev{
        e.ts, e.dur, l == t.launches.end() ? e.ts : l->second.ts, phase_of(e), kineto::is_nccl(e.name),
        -1,   {}};
    Collective c;
    if (!p2p_of(e, n, p, comm_ops, ev.p2p) && collective_of(e, n, p, comm_ops, c)) {
      const std::string at = where(p, e);
      if (std::find(c.ranks.begin(), c.ranks.end(), static_cast<int>(r)) == c.ranks.end()) {
        throw TraceError(at + ": rank " + std::to_string(r) + " is not in its process group");
      }
      ev.instance = instances.add(c, static_cast<int>(r), e.ts, seq, at);
    }
    file.events.push_back(ev);
  }
  return r;
}

// Phase 3: every instance has all its members; one program group per instance.
void add_groups(const Instances& instances, const std::vector<RankFile>& files,
                replay::StepProgram& program) {
  for (size_t k = 0; k < instances.list.size(); ++k) {
    const Collective& c = instances.list[k];
    if (instances.members[k].size() != c.ranks.size()) {
      const auto [r, ts] = instances.first_seen[k];
      throw TraceError(
          std::string(kKey) + ": " + files[static_cast<size_t>(r)].path + ": the collective at ts " +
          std::to_string(ts) + " has " + std::to_string(instances.members[k].size()) + " of its " +
          std::to_string(c.ranks.size()) + " ranks in the traces (the k-th of each group must match)");
    }
    replay::Group g;
    g.gpus = c.ranks;
    g.simulated = c.ranks;
    program.groups.push_back(std::move(g));
  }
}

// Point-to-point operations by (source, destination): (instruction, bytes) in measured order.
using P2pLists = std::map<std::pair<int, int>, std::vector<std::pair<int32_t, int64_t>>>;

// Phase 4: one rank's instructions from its events, with the dependencies of the measured
// timeline (file comment).
class RankBuilder {
 public:
  RankBuilder(int r, const Instances& instances, const std::map<std::string, int>& group_stream,
              P2pLists& sends, P2pLists& recvs, KinetoRanksStats& st)
      : r_(r), instances_(instances), group_stream_(group_stream), sends_(sends), recvs_(recvs), st_(st) {
    rank_.gpu = r;
  }

  void add(const StepEvent& e) {
    if (e.p2p.peer >= 0) {
      add_p2p(e);
    } else if (e.instance >= 0) {
      add_collective(e);
    } else {
      add_compute(e);
    }
  }

  // The step ends when the compute stream, the last collective, the last send and every
  // receive are done (more than two through zero-second joins, trace_import.h).
  replay::RankProgram finish() {
    std::vector<int32_t> sinks = receives_;
    for (const auto& [stream, last] : last_on_stream_) sinks.push_back(last);
    if (last_send_ >= 0) sinks.push_back(last_send_);
    Instr end = compute_instr(0, Category::step_end);
    end.after = join_all(rank_, std::move(sinks));
    rank_.instrs.push_back(end);
    return std::move(rank_);
  }

 private:
  // Latest entry at or before a time (equal times: the one added last), or -1.
  static int32_t latest_by(const std::multimap<double, int32_t>& m, double at) {
    const auto it = m.upper_bound(at);
    return it == m.begin() ? -1 : std::prev(it)->second;
  }
  [[nodiscard]] int32_t next() const { return static_cast<int32_t>(rank_.instrs.size()); }

  void add_p2p(const StepEvent& e) {
    Instr in;
    in.kind = e.p2p.send ? InstrKind::send : InstrKind::recv;
    in.stream = e.p2p.send ? Stream::p2p : Stream::none;
    in.category = Category::pp;
    in.peer = e.p2p.peer;
    in.bytes = e.p2p.bytes;
    const int32_t index = next();
    if (e.p2p.send) {
      in.after = latest_by(launched_, e.launch);  // the compute event launched last before it
      last_send_ = index;
      sends_[{r_, e.p2p.peer}].push_back({index, e.p2p.bytes});
    } else {
      ended_.emplace(e.ts + e.dur, index);  // a compute event after it may wait for the data
      receives_.push_back(index);
      recvs_[{e.p2p.peer, r_}].push_back({index, e.p2p.bytes});
    }
    rank_.instrs.push_back(in);
    ++st_.point_to_point;
    st_.measured_p2p_s += e.dur * 1e-6;
  }

  void add_collective(const StepEvent& e) {
    Instr in;
    in.kind = InstrKind::collective;
    in.category = Category::dp;
    const Collective& c = instances_.list[static_cast<size_t>(e.instance)];
    in.stream = replay::collective_stream(group_stream_.at(c.group_key));
    in.collective = c.kind;
    in.bytes = c.bytes;
    in.group = e.instance;
    in.after = latest_by(launched_, e.launch);  // the compute event launched last before it
    last_on_stream_[in.stream] = next();
    ended_.emplace(e.ts + e.dur, next());
    rank_.instrs.push_back(in);
    ++st_.nccl_kernels;
    st_.measured_nccl_s += e.dur * 1e-6;
  }

  // Compute stream: the collectives and receives it waited for (every one that ended while
  // the stream was idle before it), then the idle rest of its gap.
  void add_compute(const StepEvent& e) {
    std::vector<int32_t> waited;
    double wait_end = frontier_;
    for (auto it = ended_.upper_bound(frontier_); it != ended_.end() && it->first <= e.ts; ++it) {
      waited.push_back(it->second);
      wait_end = it->first;
    }
    int32_t wait = join_all(rank_, std::move(waited));
    if (e.ts < frontier_) st_.overlap_s += (std::min(frontier_, e.ts + e.dur) - e.ts) * 1e-6;
    if (wait >= 0) ++st_.waits;
    const double gap = std::isinf(wait_end) ? 0.0 : e.ts - std::max(frontier_, wait_end);
    if (gap > 0) {  // idle after the wait; the event follows it on the stream
      Instr idle = compute_instr(gap * 1e-6, Category::step_end);
      idle.after = wait;
      rank_.instrs.push_back(idle);
      st_.idle_s += gap * 1e-6;
      wait = -1;
    }
    Instr in = compute_instr(std::max(0.0, e.ts + e.dur - std::max(frontier_, e.ts)) * 1e-6,
                             phase_category(e.phase));
    in.after = wait;
    if (e.nccl) {
      in.tp_seconds = in.seconds;
      ++st_.nccl_measured;
    }
    launched_.emplace(e.launch, next());
    rank_.instrs.push_back(in);
    ++st_.kernels;
    frontier_ = std::max(frontier_, e.ts + e.dur);
  }

  int r_;
  const Instances& instances_;
  const std::map<std::string, int>& group_stream_;
  P2pLists& sends_;
  P2pLists& recvs_;
  KinetoRanksStats& st_;
  replay::RankProgram rank_;
  std::multimap<double, int32_t> launched_;   // compute events: launch ts -> instruction
  std::multimap<double, int32_t> ended_;      // collectives and receives: measured end -> instruction
  std::map<Stream, int32_t> last_on_stream_;  // the last collective of each collective stream
  int32_t last_send_ = -1;
  std::vector<int32_t> receives_;
  // Measured end of the compute stream's latest event (-inf before the first).
  double frontier_ = -std::numeric_limits<double>::infinity();
};

// Phase 5: the k-th send from s to d is the k-th receive on d from s; sizes must agree.
void pair_point_to_point(const P2pLists& sends, const P2pLists& recvs, const std::vector<RankFile>& files,
                         replay::StepProgram& program) {
  for (const auto& [pair, list] : sends) {
    const auto it = recvs.find(pair);
    const size_t have = it == recvs.end() ? 0 : it->second.size();
    if (have != list.size()) {
      throw TraceError(std::string(kKey) + ": " + files[static_cast<size_t>(pair.first)].path + ": " +
                       std::to_string(list.size()) + " sends to rank " + std::to_string(pair.second) +
                       " but " + std::to_string(have) + " receives from rank " + std::to_string(pair.first) +
                       " in " + files[static_cast<size_t>(pair.second)].path);
    }
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k].second != it->second[k].second) {
        throw TraceError(std::string(kKey) + ": " + files[static_cast<size_t>(pair.first)].path + ": send #" +
                         std::to_string(k) + " to rank " + std::to_string(pair.second) + " carries " +
                         std::to_string(list[k].second) + " bytes, its receive " +
                         std::to_string(it->second[k].second));
      }
      program.ranks[static_cast<size_t>(pair.first)].instrs[static_cast<size_t>(list[k].first)].peer_instr =
          it->second[k].first;
    }
  }
  for (const auto& [pair, list] : recvs) {
    if (sends.count(pair) == 0) {
      throw TraceError(std::string(kKey) + ": " + files[static_cast<size_t>(pair.second)].path + ": " +
                       std::to_string(list.size()) + " receives from rank " + std::to_string(pair.first) +
                       " without a matching send");
    }
  }
}

}  // namespace

replay::StepProgram import_kineto_ranks(const std::string& directory, KinetoRanksStats* stats, int64_t step) {
  const std::vector<std::string> paths = rank_files(directory);
  const auto n = static_cast<int64_t>(paths.size());
  KinetoRanksStats st;
  st.ranks = static_cast<int>(n);
  std::vector<RankFile> files(paths.size());
  std::vector<bool> seen(paths.size(), false);
  Instances instances;
  for (const std::string& p : paths) read_rank(p, directory, n, step, seen, files, instances);

  replay::StepProgram program;
  add_groups(instances, files, program);
  st.collectives = static_cast<int>(instances.list.size());
  // Each process group has its own in-order collective stream (NCCL gives every communicator
  // its own CUDA stream), numbered in order of first appearance; past the streams the
  // executor has, groups share them (replay::collective_stream wraps).
  std::map<std::string, int> group_stream;
  for (const Collective& c : instances.list)
    group_stream.emplace(c.group_key, static_cast<int>(group_stream.size()));

  P2pLists sends, recvs;
  for (size_t r = 0; r < files.size(); ++r) {
    const std::vector<StepEvent>& events = files[r].events;
    RankBuilder builder(static_cast<int>(r), instances, group_stream, sends, recvs, st);
    const double t0 = events.front().ts;
    double last_end = t0;
    for (const StepEvent& e : events) {
      last_end = std::max(last_end, e.ts + e.dur);
      builder.add(e);
    }
    if ((last_end - t0) * 1e-6 > kMaxStepSeconds) {
      throw TraceError(std::string(kKey) + ": " + files[r].path + ": the GPU events span " +
                       std::to_string((last_end - t0) * 1e-6) + " s, more than the hour a replayed step may");
    }
    st.measured_step_s = std::max(st.measured_step_s, (last_end - t0) * 1e-6);
    program.ranks.push_back(builder.finish());
  }
  pair_point_to_point(sends, recvs, files, program);
  st.point_to_point /= 2;  // pairs
  program.steps = 1;
  if (stats != nullptr) *stats = st;
  return program;
}

}  // namespace ct::trace

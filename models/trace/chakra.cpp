// Chakra execution traces (ASTRA-sim format) -> replay::StepProgram.
//
// Files: every `<name>.<rank>.et` in the directory, one <name>, ranks 0..N-1; rank r runs on
// GPU r. Each file is a sequence of varint-length-prefixed protobuf messages: one
// GlobalMetadata (version, which must be "0.0.4"; attribute ct_comm_size, when present,
// "astra-sim"), then Nodes, parsed with the protobuf
// library from chakra_et.proto (our copy of the schema's field numbers): a node's id, name,
// type, ctrl_deps and data_deps, duration_micros and attributes; an attribute holds a number
// (double, float or any integer type; bool as 0/1) or a string (list values are ignored).
//   NodeType: 2 MEM_LOAD, 3 MEM_STORE, 4 COMP, 5 COMM_SEND, 6 COMM_RECV, 7 COMM_COLL; others
//         (metadata, invalid) take no time and only pass their dependencies on.
//   CollectiveCommType (attr comm_type): 0 ALL_REDUCE, 2 ALL_GATHER, 6 ALL_TO_ALL,
//         7 REDUCE_SCATTER; others are an error.
// Rules:
//   * Dependencies are ctrl_deps and data_deps together (a ctrl_dep on a node the file does not
//     have is dropped and counted, ChakraStats::dropped_ctrl_deps; in a file without a version,
//     Chakra's PyTorch converter's, ctrl_deps name each node's parent operator and only the
//     data_deps are dependencies, as ASTRA-sim's feeder reads them; a data_dep on a missing
//     node is an error); nodes are emitted in topological
//     order (file order among ready nodes). Each stream runs in emission order, so a
//     dependency on an instruction emitted earlier on the node's own stream is implied and
//     dropped. Up to two remaining ones become after/after2; more are joined through
//     zero-second join instructions (see trace_import.h) on the compute stream.
//   * COMP: compute stream, duration_micros as measured (no roofline from num_ops).
//   * MEM_LOAD / MEM_STORE (ASTRA-sim's remote-memory accesses): compute stream, for
//     duration_micros, or without one tensor_size / ChakraOptions::memory_bytes_per_s (the
//     node's PCIe rate: memory outside the GPU); neither is an error naming the node.
//   * COMM_COLL: dp stream. bytes (the nccl-tests size) = ct_bytes when present (our export),
//     else comm_size in Chakra's and ASTRA-sim's convention, the buffer each rank puts in: an
//     all-gather's is comm_size x its members (a ClusterTwin export without the GlobalMetadata
//     attribute ct_comm_size, which has ct_category nodes, wrote the nccl-tests size). An
//     INVALID node with ct_local_collective is the collective of a one-rank group. The k-th
//     collective of process group pg_name (attr; absent or "0" = all ranks, as in ASTRA-sim)
//     on each rank forms one group with the k-th of every other rank that has one; kind and
//     size must agree. ALL_TO_ALL is the NCCL-like all-to-all of the collective engine.
//   * COMM_SEND (comm_dst, comm_size, comm_tag) on the p2p stream; COMM_RECV (comm_src,
//     comm_tag) belongs to no stream. The k-th send r->d with a tag matches the k-th receive on
//     d from r with that tag (r = d is a local copy, delivered after zero delay); an unmatched
//     one is an error. A receive's own dependencies are not modelled (it completes when the
//     matching send is delivered).
//   * ClusterTwin's own attributes (written by chakra_export.cpp, ignored by other readers):
//     ct_duration_s (double) replaces duration_micros when it rounds to it (an edited
//     duration_micros wins); ct_tp_s the exposed TP part of it; ct_category (forward,
//     backward, optimizer, step_end) of a COMP node; ct_stream "compute" for a send that holds
//     the compute stream, "collectives<k>" for a collective on the k-th extra collective
//     stream (replay::collective_stream); ct_step, ct_chunk, ct_microbatch. When every rank
//     has step_end nodes the trace carries its own step ends: steps = 1 + the largest ct_step, every rank
//     needs a step_end of each step, no final step_end is appended, and no join may be needed
//     (a join is a step_end instruction and would move the step's end).
//   * Limits: durations must be finite and non-negative and add up to at most an hour (3600 s)
//     per rank -- a recorded step, not a run; the executor keeps GPU activity in 100 us
//     buckets, so replayed time costs memory --; comm_size is 0..1 TiB; ct_step < 1024.
//     Violations are errors naming the file and node.
// Every error names the file and the byte offset (wire format) or the node id (content).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "chakra_et.pb.h"
#include "models/trace/file_io.h"
#include "models/trace/program_build.h"
#include "models/trace/trace_import.h"
#include "sim/input_limits.h"

namespace ct::trace {
namespace {

using google::protobuf::internal::WireFormatLite;
using replay::Category;
using replay::CollectiveKind;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

constexpr const char* kKey = "trace.path";
constexpr int64_t kMaxSteps = 1024;

std::string prefix(const std::string& file) { return std::string(kKey) + ": " + file + ": "; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// ---- messages ----------------------------------------------------------------------------

enum NodeType : uint32_t { kMemLoad = 2, kMemStore = 3, kComp = 4, kSend = 5, kRecv = 6, kColl = 7 };

struct Attr {
  int64_t i = 0;
  double d = 0;
  std::string s;
  bool is_number = false;
  bool is_integer = false;  // an integer wire type, or a double holding an integral int64
};

struct Node {
  uint64_t id = 0;
  size_t offset = 0;  // byte offset of the node's message in its file
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> deps;  // data and control dependencies
  std::vector<uint64_t> ctrl;  // while decoding: the control dependencies
  uint64_t duration_us = 0;
  std::map<std::string, Attr> attr;

  [[nodiscard]] bool has(const std::string& k) const { return attr.count(k) != 0; }
  [[nodiscard]] std::string where(const std::string& file) const {
    return prefix(file) + "node " + std::to_string(id) + " (" + (name.empty() ? "" : name + ", ") + "byte " +
           std::to_string(offset) + ")";
  }
  [[nodiscard]] int64_t integer(const std::string& k, const std::string& file) const {
    const auto it = attr.find(k);
    if (it == attr.end() || !it->second.is_integer)
      throw TraceError(where(file) + " lacks integer attribute " + k);
    return it->second.i;
  }
  [[nodiscard]] const Attr* find(const std::string& k) const {
    const auto it = attr.find(k);
    return it == attr.end() ? nullptr : &it->second;
  }
};

void set_integer(Attr& a, int64_t v) {
  a.i = v;
  a.d = static_cast<double>(v);
  a.is_number = a.is_integer = true;
}

void set_real(Attr& a, double v) {
  a.d = v;
  a.is_number = true;
  // 2^63 is exact in double; integral values inside (-2^63, 2^63) convert without overflow.
  a.is_integer = std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9223372036854775808.0;
  a.i = a.is_integer ? static_cast<int64_t>(v) : 0;
}

Attr attr_of(const chakra::AttributeProto& a) {
  using V = chakra::AttributeProto;
  Attr out;
  switch (a.value_case()) {
    case V::kDoubleVal:
      set_real(out, a.double_val());
      break;
    case V::kFloatVal:
      set_real(out, a.float_val());
      break;
    case V::kInt32Val:
      set_integer(out, a.int32_val());
      break;
    case V::kInt64Val:
      set_integer(out, a.int64_val());
      break;
    case V::kUint32Val:
      set_integer(out, a.uint32_val());
      break;
    case V::kUint64Val:
      set_integer(out, static_cast<int64_t>(a.uint64_val()));
      break;
    case V::kSint32Val:
      set_integer(out, a.sint32_val());
      break;
    case V::kSint64Val:
      set_integer(out, a.sint64_val());
      break;
    case V::kFixed32Val:
      set_integer(out, a.fixed32_val());
      break;
    case V::kFixed64Val:
      set_integer(out, static_cast<int64_t>(a.fixed64_val()));
      break;
    case V::kSfixed32Val:
      set_integer(out, a.sfixed32_val());
      break;
    case V::kSfixed64Val:
      set_integer(out, a.sfixed64_val());
      break;
    case V::kBoolVal:
      set_integer(out, a.bool_val() ? 1 : 0);
      break;
    case V::kStringVal:
      out.s = a.string_val();
      break;
    case V::kBytesVal:
    case V::VALUE_NOT_SET:
      break;
  }
  return out;
}

// Reads the varint-length-prefixed message at the stream's position into `m`; false at the
// end of the data. Errors name the byte where the message's length prefix starts.
bool next_message(google::protobuf::io::CodedInputStream& in, size_t total, google::protobuf::MessageLite& m,
                  const std::string& file, const char* what) {
  const auto at = static_cast<size_t>(in.CurrentPosition());
  if (at == total) return false;
  const std::string here = prefix(file) + "corrupt protobuf at byte " + std::to_string(at) + ": ";
  uint64_t size = 0;
  if (!in.ReadVarint64(&size)) throw TraceError(here + "truncated length prefix of a " + what);
  const size_t left = total - static_cast<size_t>(in.CurrentPosition());
  if (size > left) {
    throw TraceError(here + what + " of " + std::to_string(size) + " bytes runs past the end (" +
                     std::to_string(left) + " bytes left)");
  }
  const auto limit = in.PushLimit(static_cast<int>(size));
  const bool parsed = m.MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
  in.PopLimit(limit);
  if (!parsed) {
    throw TraceError(here + "the " + std::to_string(size) + "-byte " + what +
                     " does not parse (a field cut short, or a malformed tag or group)");
  }
  return true;
}

// Whether the length-prefixed message at byte `at` is a node of the schema before 0.0.4: it has
// field 11 (its typed attribute list) or a length-delimited field 7 (input_types, where 0.0.4
// has the varint duration_micros). Reads the wire format only.
bool pre_004_node(const std::string& data, size_t at) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(data.data()) + at,
                                            static_cast<int>(data.size() - at));
  uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const auto limit = in.PushLimit(static_cast<int>(length));
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    const uint32_t field = WireFormatLite::GetTagFieldNumber(tag);
    if (field == 11 ||
        (field == 7 && WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED))
      return true;
    if (!WireFormatLite::SkipField(&in, tag)) return false;
  }
  in.PopLimit(limit);
  return false;
}

// `size_convention` receives the GlobalMetadata attribute ct_comm_size ("" when absent).
// `dropped_ctrl` counts the control dependencies not used: in a file without a version (Chakra's
// PyTorch converter) ctrl_deps are the parent operator of each node, not an order (they run
// against the data_deps: cycles), and ASTRA-sim's feeder reads data_deps only, so all of them;
// elsewhere those on nodes the file does not have. A data dependency on a missing node stays
// an error (topo_order).
std::vector<Node> decode_et(const std::string& data, const std::string& file, std::string& size_convention,
                            int64_t& dropped_ctrl) {
  if (data.empty()) throw TraceError(prefix(file) + "empty file");
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw TraceError(prefix(file) + "larger than 2 GiB, the most one protobuf stream reads");
  }
  // The first message is GlobalMetadata. Files of ASTRA-sim's 2023 text converter have none:
  // their first message is a node (tag 0x08, its id; or, for id 0, one that does not parse as
  // metadata); those are read as nodes from byte 0 when every node parses as this schema's,
  // and refused as the schema before 0.0.4 (typed attribute lists, other collective codes)
  // when a node has fields this schema does not know.
  const auto stream_at_start = [&] {
    return google::protobuf::io::CodedInputStream(reinterpret_cast<const uint8_t*>(data.data()),
                                                  static_cast<int>(data.size()));
  };
  bool has_metadata = true;
  {
    size_t at = 0;
    while (at < data.size() && (static_cast<unsigned char>(data[at]) & 0x80) != 0) ++at;
    if (at + 1 < data.size() && data[at + 1] == '\x08') has_metadata = false;
  }
  chakra::GlobalMetadata meta;
  google::protobuf::io::CodedInputStream in = stream_at_start();
  if (has_metadata) {
    try {
      next_message(in, data.size(), meta, file, "GlobalMetadata");
    } catch (const TraceError&) {
      // Not metadata: a node of id 0 (whose first field is its name) starts the file, or it is corrupt.
      chakra::Node first;
      google::protobuf::io::CodedInputStream again = stream_at_start();
      bool node = false;
      try {
        node = next_message(again, data.size(), first, file, "Node") && first.type() != chakra::INVALID_NODE;
      } catch (const TraceError&) {
      }
      if (!node) throw;
      has_metadata = false;
    }
  }
  google::protobuf::io::CodedInputStream from_start = stream_at_start();
  google::protobuf::io::CodedInputStream& nodes_in = has_metadata ? in : from_start;
  // Versions written by the tools that emit this schema (Node fields of et_def.proto since
  // 0.0.4, 2023-10): "0.0.4" (ASTRA-sim's microbenchmarks, this project's export), "1.0.0"
  // (Chakra's generator), "" with a "schema" attribute (Chakra's PyTorch converter copies the
  // execution trace's, e.g. 1.0.2-chakra.0.0.4 or 1.0.1; ASTRA-sim's custom collectives).
  size_convention.clear();
  for (const chakra::AttributeProto& a : meta.attr()) {
    if (a.name() == "ct_comm_size") size_convention = a.string_val();
  }
  const std::string& v = meta.version();
  if (v != kChakraVersion && v != "1.0.0" && !v.empty()) {
    throw TraceError(prefix(file) + "GlobalMetadata at byte 0: Chakra schema version '" + v +
                     "'; this reader decodes 0.0.4 and 1.0.0, or no version (Chakra's converter)");
  }
  std::vector<Node> nodes;
  chakra::Node msg;
  for (;;) {
    const auto at = static_cast<size_t>(nodes_in.CurrentPosition());
    msg.Clear();
    if (!next_message(nodes_in, data.size(), msg, file, "Node")) break;
    if (!has_metadata && pre_004_node(data, at)) {
      throw TraceError(
          prefix(file) + "node at byte " + std::to_string(at) +
          ": no GlobalMetadata and fields this schema does not have: a file of the Chakra "
          "schema before 0.0.4 (2023), which this reader does not decode (it reads 0.0.4 and 1.0.x); "
          "convert the source again with MLCommons Chakra's current converter");
    }
    Node n;
    n.offset = at;
    n.id = msg.id();
    n.name = msg.name();
    n.type = static_cast<uint32_t>(msg.type());
    n.deps.assign(msg.data_deps().begin(), msg.data_deps().end());
    n.ctrl.assign(msg.ctrl_deps().begin(), msg.ctrl_deps().end());
    n.duration_us = msg.duration_micros();
    for (const chakra::AttributeProto& a : msg.attr()) n.attr[a.name()] = attr_of(a);
    if (static_cast<int64_t>(nodes.size()) >= sim::input_limit("trace_events")) {
      try {
        sim::input_limit_exceeded("trace_events", prefix(file) + "nodes",
                                  static_cast<int64_t>(nodes.size()) + 1, true);
      } catch (const sim::InputLimitError& e) {
        throw TraceError(e.what());
      }
    }
    nodes.push_back(std::move(n));
  }
  std::unordered_set<uint64_t> ids;
  for (const Node& n : nodes) ids.insert(n.id);
  const bool converter = meta.version().empty();
  for (Node& n : nodes) {
    for (const uint64_t d : n.ctrl) {
      if (!converter && ids.count(d) != 0) {
        n.deps.push_back(d);
      } else {
        ++dropped_ctrl;
      }
    }
    n.ctrl.clear();
  }
  return nodes;
}

// ---- program building ----------------------------------------------------------------------

struct RankBuild {
  std::vector<Instr> instrs;
  std::string file;
  bool own_ends = false;       // the trace carries its step_end instructions
  const Node* node = nullptr;  // the node being emitted
};

void unique_deps(std::vector<int32_t>& deps) {
  deps.erase(std::remove(deps.begin(), deps.end(), -1), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
}

// A join is a step_end instruction: in a trace with its own step ends it would move them.
void no_join(const RankBuild& rb, size_t deps, size_t limit) {
  if (!rb.own_ends) return;
  throw TraceError(rb.node->where(rb.file) + ": waits for " + std::to_string(deps) +
                   " instructions beyond its stream's order; a trace that carries its own step ends "
                   "(ct_category step_end) allows " +
                   std::to_string(limit));
}

// An instruction index standing for "all of deps done" (-1 = none), adding joins as needed.
int32_t join(RankBuild& rb, std::vector<int32_t> deps) {
  unique_deps(deps);
  if (deps.empty()) return -1;
  if (deps.size() > 1) no_join(rb, deps.size(), 1);
  return join_down(rb.instrs, std::move(deps), 1).front();
}

// Sets in.after/after2 from deps: those implied by in's stream dropped, joined beyond two.
void depend(RankBuild& rb, Instr& in, std::vector<int32_t> deps) {
  unique_deps(deps);
  if (in.stream != Stream::none) {
    deps.erase(
        std::remove_if(deps.begin(), deps.end(),
                       [&](int32_t d) { return rb.instrs[static_cast<size_t>(d)].stream == in.stream; }),
        deps.end());
  }
  if (deps.size() > 2) {
    no_join(rb, deps.size(), 2);
    const int32_t last = deps.back();
    deps.pop_back();
    in.after = join(rb, deps);
    in.after2 = last;
  } else {
    if (!deps.empty()) in.after = deps[0];
    if (deps.size() > 1) in.after2 = deps[1];
  }
}

std::vector<size_t> topo_order(const std::vector<Node>& nodes, const std::string& file) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!index.emplace(nodes[i].id, i).second) throw TraceError(nodes[i].where(file) + ": duplicate node id");
  }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const uint64_t d : nodes[i].deps) {
      const auto it = index.find(d);
      if (it == index.end())
        throw TraceError(nodes[i].where(file) + " depends on unknown node " + std::to_string(d));
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (const size_t u : users[i]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (pending[i] > 0) throw TraceError(nodes[i].where(file) + " is on a dependency cycle");
    }
  }
  return order;
}

struct CollInstance {
  std::vector<std::pair<int, size_t>> members;  // (rank, node index)
};

struct P2pKey {
  int src, dst;
  int64_t tag;
  bool operator<(const P2pKey& o) const { return std::tie(src, dst, tag) < std::tie(o.src, o.dst, o.tag); }
};

bool is_step_end(const Node& n) {
  const Attr* c = n.find("ct_category");
  return n.type == kComp && c != nullptr && c->s == "step_end";
}

// Node duration in seconds: ct_duration_s when it rounds to duration_micros, else the latter.
double seconds_of(const Node& n, const std::string& file) {
  const Attr* exact = n.find("ct_duration_s");
  if (exact != nullptr && exact->is_number) {
    if (!std::isfinite(exact->d) || exact->d < 0 || exact->d > kMaxStepSeconds) {
      throw TraceError(n.where(file) + ": ct_duration_s " + num(exact->d) + " is not in 0.." +
                       num(kMaxStepSeconds) + " s");
    }
    const auto micros = static_cast<long long>(std::min<uint64_t>(n.duration_us, uint64_t{1} << 62));
    if (std::llround(exact->d * 1e6) == micros) return exact->d;
  }
  if (static_cast<double>(n.duration_us) > kMaxStepSeconds * 1e6) {
    throw TraceError(n.where(file) + ": duration_micros " + std::to_string(n.duration_us) + " exceeds " +
                     num(kMaxStepSeconds) + " s");
  }
  return static_cast<double>(n.duration_us) * 1e-6;
}

// A memory node's time: its duration when it has one, else tensor_size / memory_bytes_per_s.
double memory_seconds(const Node& n, const std::string& file, const ChakraOptions& options) {
  if (n.duration_us > 0 || n.has("ct_duration_s")) return seconds_of(n, file);
  if (!n.has("tensor_size"))
    throw TraceError(n.where(file) + ": memory node with neither duration_micros nor tensor_size");
  const int64_t bytes = n.integer("tensor_size", file);
  if (bytes < 0 || bytes > kMaxMessageBytes) {
    throw TraceError(n.where(file) + ": tensor_size " + std::to_string(bytes) + " is not in 0..2^40 bytes");
  }
  if (!(options.memory_bytes_per_s > 0)) {
    throw TraceError(
        n.where(file) + ": memory node of tensor_size " + std::to_string(bytes) +
        " without duration_micros, and no memory bandwidth to time it (the cluster's PCIe rate)");
  }
  return static_cast<double>(bytes) / options.memory_bytes_per_s;
}

int64_t comm_bytes(const Node& n, const std::string& file) {
  const int64_t size = n.integer("comm_size", file);
  if (size < 0 || size > kMaxMessageBytes) {
    throw TraceError(n.where(file) + ": comm_size " + std::to_string(size) + " is not in 0..2^40 bytes");
  }
  return size;
}

// Optional integer ct_* attribute within [lo, hi].
int64_t ct_int(const Node& n, const std::string& k, int64_t lo, int64_t hi, const std::string& file) {
  if (!n.has(k)) return 0;
  const int64_t v = n.integer(k, file);
  if (v < lo || v > hi) {
    throw TraceError(n.where(file) + ": " + k + " " + std::to_string(v) + " is not in " + std::to_string(lo) +
                     ".." + std::to_string(hi));
  }
  return v;
}

// A collective: COMM_COLL, or (ClusterTwin's export) a one-rank collective written as an
// INVALID_NODE with ct_local_collective, which ASTRA-sim would never complete as a collective.
// Chakra's PyTorch converter writes each collective twice: the CPU-side c10d:: operator
// (is_cpu_op, no comm_type), which takes no time here, and the NCCL kernel. A broadcast
// (comm_type 5) runs for its duration_micros, as ASTRA-sim replays it (Workload.cc).
bool cpu_side_collective(const Node& n) {
  const auto cpu = n.attr.find("is_cpu_op");
  return n.type == kColl && cpu != n.attr.end() && cpu->second.is_integer && cpu->second.i != 0 &&
         !n.has("comm_type");
}
bool measured_broadcast(const Node& n) {
  const auto t = n.attr.find("comm_type");
  return n.type == kColl && t != n.attr.end() && t->second.is_integer && t->second.i == 5;
}
bool is_collective(const Node& n) {
  return (n.type == kColl && !cpu_side_collective(n) && !measured_broadcast(n)) ||
         (n.type == 0 && n.has("ct_local_collective"));
}

// Bytes of a collective in the nccl-tests sense (all-gather: the gathered output). ct_bytes (our
// export) is exact. Otherwise comm_size is in Chakra's and ASTRA-sim's convention, the buffer
// each rank puts in (an all-gather's is 1/members of the output), except in ClusterTwin exports
// that predate the ct_comm_size metadata (legacy), which wrote the nccl-tests size.
int64_t collective_bytes(const Node& n, const std::string& file, int64_t members, bool legacy) {
  if (n.has("ct_bytes")) {
    const int64_t exact = n.integer("ct_bytes", file);
    if (exact < 0 || exact > kMaxMessageBytes) {
      throw TraceError(n.where(file) + ": ct_bytes " + std::to_string(exact) + " is not in 0..2^40 bytes");
    }
    return exact;
  }
  const int64_t size = comm_bytes(n, file);
  if (legacy || n.integer("comm_type", file) != 2) return size;
  if (size > kMaxMessageBytes / std::max<int64_t>(1, members)) {
    throw TraceError(n.where(file) + ": all-gather comm_size " + std::to_string(size) + " x " +
                     std::to_string(members) + " ranks is more than 2^40 bytes");
  }
  return size * members;
}

std::string pg_of(const Node& n) {
  const Attr* pg = n.find("pg_name");
  return pg == nullptr || pg->s == "0" ? std::string() : pg->s;
}

}  // namespace

replay::StepProgram import_chakra(const std::string& directory, ChakraStats* stats,
                                  const ChakraOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(directory, ec)) throw TraceError(prefix(directory) + "no such directory");
  if (!fs::is_directory(directory, ec)) {
    throw TraceError(prefix(directory) + "expected a directory of <name>.<rank>.et files");
  }
  std::map<int, std::string> files;
  std::string name;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string f = entry.path().filename().string();
    if (f.size() < 4 || f.compare(f.size() - 3, 3, ".et") != 0) continue;
    const std::string stem = f.substr(0, f.size() - 3);
    const size_t dot = stem.rfind('.');
    const std::string rank_text = dot == std::string::npos ? "" : stem.substr(dot + 1);
    const bool digits =
        std::all_of(rank_text.begin(), rank_text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (rank_text.empty() || !digits || rank_text.size() > 7) {
      throw TraceError(prefix(entry.path().string()) + "expected <name>.<rank>.et");
    }
    const std::string base = stem.substr(0, dot);
    if (name.empty()) name = base;
    if (base != name)
      throw TraceError(prefix(directory) + "traces of two workloads (" + name + ", " + base + ")");
    files[std::stoi(rank_text)] = entry.path().string();
  }
  if (files.empty()) throw TraceError(prefix(directory) + "no <name>.<rank>.et files");
  try {
    sim::check_input_limit("trace_ranks", prefix(directory) + "rank files",
                           static_cast<int64_t>(files.size()));
  } catch (const sim::InputLimitError& e) {
    throw TraceError(e.what());
  }
  const int n = static_cast<int>(files.size());
  for (int r = 0; r < n; ++r) {
    if (files.count(r) == 0) {
      throw TraceError(prefix(directory) + "rank " + std::to_string(r) + " missing (" + std::to_string(n) +
                       " files, ranks must be 0.." + std::to_string(n - 1) + ")");
    }
  }
  std::vector<std::pair<std::string, std::string>> ranks;
  for (int r = 0; r < n; ++r) ranks.emplace_back(files[r], detail::read_file(files[r], kKey));
  replay::StepProgram program = import_chakra_bytes(directory, ranks, stats, options);
  if (stats != nullptr) stats->name = name;
  return program;
}

namespace {

// One import: the ranks' decoded nodes, their collective groups, and the program emitted from
// them, phase by phase (decode, index collectives, emit each rank, link point-to-point).
struct ChakraImport {
  ChakraImport(const std::string& where_, const ChakraOptions& options_) : where(where_), options(options_) {}
  const std::string& where;
  const ChakraOptions& options;
  int n = 0;
  std::vector<std::string> files;
  std::vector<std::vector<Node>> nodes;
  std::vector<std::vector<size_t>> order;
  std::vector<bool> legacy_sizes;  // per rank: a ClusterTwin export that wrote nccl-tests sizes
  ChakraStats st;
  int64_t steps = 1;
  bool own_ends = false;
  std::map<std::pair<std::string, int>, int32_t> group_of;
  std::vector<std::map<size_t, std::pair<std::string, int>>> instance_of;
  replay::StepProgram program;
  std::vector<RankBuild> build;
  std::map<P2pKey, std::vector<int32_t>> sends, recvs;  // instruction indices, in order
  std::map<P2pKey, std::vector<uint64_t>> send_nodes;   // node ids, for errors

  // Parse each rank, order its nodes, bound its durations, and find its step ends.
  void decode(const std::vector<std::pair<std::string, std::string>>& rank_files) {
    n = static_cast<int>(rank_files.size());
    if (n == 0) throw TraceError(prefix(where) + "no ranks");
    for (const auto& f : rank_files) files.push_back(f.first);
    nodes.resize(static_cast<size_t>(n));
    order.resize(static_cast<size_t>(n));
    legacy_sizes.assign(static_cast<size_t>(n), false);
    st.ranks = n;
    int ranks_with_ends = 0;
    for (int r = 0; r < n; ++r) {
      const auto ru = static_cast<size_t>(r);
      std::string convention;
      nodes[ru] = decode_et(rank_files[ru].second, files[ru], convention, st.dropped_ctrl_deps);
      if (!convention.empty() && convention != "astra-sim") {
        throw TraceError(prefix(files[ru]) + "GlobalMetadata ct_comm_size '" + convention +
                         "' is not astra-sim, the one convention this reader knows");
      }
      legacy_sizes[ru] =
          convention.empty() && std::any_of(nodes[ru].begin(), nodes[ru].end(),
                                            [](const Node& nd) { return nd.has("ct_category"); });
      order[ru] = topo_order(nodes[ru], files[ru]);
      st.nodes += static_cast<int>(nodes[ru].size());
      bool has_end = false;
      double total = 0;
      for (const Node& nd : nodes[ru]) {
        if (nd.type == kComp || nd.type == kMemLoad || nd.type == kMemStore) {
          total += nd.type == kComp ? seconds_of(nd, files[ru]) : memory_seconds(nd, files[ru], options);
          if (total > kMaxStepSeconds) {
            throw TraceError(nd.where(files[ru]) + ": durations on this rank add up to more than " +
                             num(kMaxStepSeconds) + " s");
          }
        }
        if (is_step_end(nd)) {
          has_end = true;
          steps = std::max(steps, 1 + ct_int(nd, "ct_step", 0, kMaxSteps - 1, files[ru]));
        }
      }
      ranks_with_ends += has_end ? 1 : 0;
    }
    own_ends = ranks_with_ends == n;
    if (ranks_with_ends > 0 && !own_ends) {
      throw TraceError(prefix(where) + std::to_string(ranks_with_ends) + " of " + std::to_string(n) +
                       " ranks carry step_end nodes (ct_category); all or none must");
    }
    if (!own_ends) steps = 1;
  }

  // Collective instances (the k-th collective of a process group on each rank) become groups.
  void index_collectives() {
    std::map<std::pair<std::string, int>, CollInstance> instances;
    instance_of.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      std::map<std::string, int> seq;
      for (const size_t i : order[static_cast<size_t>(r)]) {
        const Node& nd = nodes[static_cast<size_t>(r)][i];
        if (!is_collective(nd)) continue;
        const std::string pg = pg_of(nd);
        const std::pair<std::string, int> key{pg, seq[pg]++};
        instances[key].members.emplace_back(r, i);
        instance_of[static_cast<size_t>(r)][i] = key;
      }
    }
    for (auto& [key, inst] : instances) {
      const Node& first = nodes[static_cast<size_t>(inst.members[0].first)][inst.members[0].second];
      const std::string& f0 = files[static_cast<size_t>(inst.members[0].first)];
      const int64_t type = first.integer("comm_type", f0);
      const auto members = static_cast<int64_t>(inst.members.size());
      const int64_t size =
          collective_bytes(first, f0, members, legacy_sizes[static_cast<size_t>(inst.members[0].first)]);
      if (key.first.empty() && static_cast<int>(inst.members.size()) != n) {
        throw TraceError(first.where(f0) + ": collective #" + std::to_string(key.second) + " appears on " +
                         std::to_string(inst.members.size()) + " of " + std::to_string(n) +
                         " ranks and has no pg_name (all ranks)");
      }
      if (type != 0 && type != 2 && type != 6 && type != 7) {
        throw TraceError(first.where(f0) + ": comm_type " + std::to_string(type) +
                         " not supported (all_reduce 0, all_gather 2, all_to_all 6, reduce_scatter 7)");
      }
      replay::Group g;
      for (const auto& [r, i] : inst.members) {
        const Node& nd = nodes[static_cast<size_t>(r)][i];
        const std::string& f = files[static_cast<size_t>(r)];
        if (nd.integer("comm_type", f) != type ||
            collective_bytes(nd, f, members, legacy_sizes[static_cast<size_t>(r)]) != size) {
          throw TraceError(nd.where(f) + ": collective #" + std::to_string(key.second) +
                           " of process group '" + key.first +
                           "' differs in comm_type or comm_size from rank " +
                           std::to_string(inst.members[0].first));
        }
        g.gpus.push_back(r);
        g.simulated.push_back(r);
      }
      ++st.collectives;
      if (type == 6) ++st.all_to_all;
      group_of[key] = static_cast<int32_t>(program.groups.size());
      program.groups.push_back(std::move(g));
    }
  }

  int32_t emit_memory(RankBuild& rb, const Node& nd, Instr in, const std::vector<int32_t>& deps) {
    in.kind = InstrKind::compute;
    in.stream = Stream::compute;
    in.category = Category::forward;
    in.seconds = memory_seconds(nd, rb.file, options);
    depend(rb, in, deps);
    rb.instrs.push_back(in);
    ++st.memory;
    return static_cast<int32_t>(rb.instrs.size() - 1);
  }

  int32_t emit_compute(RankBuild& rb, const Node& nd, Instr in, const std::vector<int32_t>& deps,
                       std::vector<bool>& ends) {
    in.kind = InstrKind::compute;
    in.stream = Stream::compute;
    in.category = Category::forward;
    if (const Attr* c = nd.find("ct_category"); c != nullptr) {
      const std::string& s = c->s;
      if (s == "backward") {
        in.category = Category::backward;
      } else if (s == "optimizer") {
        in.category = Category::optimizer;
      } else if (s == "step_end") {
        in.category = Category::step_end;
      } else if (s != "forward") {
        throw TraceError(nd.where(rb.file) + ": ct_category '" + s +
                         "' is not forward, backward, optimizer or step_end");
      }
    }
    in.seconds = seconds_of(nd, rb.file);
    if (const Attr* tp = nd.find("ct_tp_s"); tp != nullptr && tp->is_number) {
      if (!(tp->d >= 0)) throw TraceError(nd.where(rb.file) + ": ct_tp_s is not a non-negative number");
      in.tp_seconds = std::min(tp->d, in.seconds);
    }
    if (in.category == Category::step_end && own_ends) ends[static_cast<size_t>(in.step)] = true;
    depend(rb, in, deps);
    rb.instrs.push_back(in);
    return static_cast<int32_t>(rb.instrs.size() - 1);
  }

  int32_t emit_collective(int r, size_t i, RankBuild& rb, const Node& nd, Instr in,
                          const std::vector<int32_t>& deps) {
    const int64_t type = nd.integer("comm_type", rb.file);
    in.kind = InstrKind::collective;
    in.stream = Stream::dp;
    in.category = Category::dp;
    in.collective = type == 0   ? CollectiveKind::all_reduce
                    : type == 2 ? CollectiveKind::all_gather
                    : type == 6 ? CollectiveKind::all_to_all
                                : CollectiveKind::reduce_scatter;
    in.group = group_of.at(instance_of[static_cast<size_t>(r)].at(i));
    in.bytes = collective_bytes(
        nd, rb.file, static_cast<int64_t>(program.groups[static_cast<size_t>(in.group)].gpus.size()),
        legacy_sizes[static_cast<size_t>(r)]);
    if (const Attr* cs = nd.find("ct_stream"); cs != nullptr) {
      const std::string& v = cs->s;
      const bool ok = v.size() > 11 && v.rfind("collectives", 0) == 0 && v.size() <= 12 && v[11] >= '1' &&
                      v[11] <= static_cast<char>('0' + replay::kExtraCollectiveStreams);
      if (!ok) {
        throw TraceError(nd.where(rb.file) + ": ct_stream '" + v + "' is not collectives1..collectives" +
                         std::to_string(replay::kExtraCollectiveStreams));
      }
      in.stream = replay::collective_stream(v[11] - '0');
    }
    depend(rb, in, deps);
    rb.instrs.push_back(in);
    return static_cast<int32_t>(rb.instrs.size() - 1);
  }

  int32_t emit_point_to_point(int r, RankBuild& rb, const Node& nd, Instr in,
                              const std::vector<int32_t>& deps) {
    const bool send = nd.type == kSend;
    const int64_t peer = nd.integer(send ? "comm_dst" : "comm_src", rb.file);
    if (peer < 0 || peer >= n) {
      throw TraceError(nd.where(rb.file) + " names rank " + std::to_string(peer) + ", outside 0.." +
                       std::to_string(n - 1));
    }
    const int64_t tag = nd.has("comm_tag") ? nd.integer("comm_tag", rb.file) : 0;
    in.kind = send ? InstrKind::send : InstrKind::recv;
    in.stream = send ? Stream::p2p : Stream::none;
    if (const Attr* s = nd.find("ct_stream"); send && s != nullptr) {
      if (s->s == "compute") {
        in.stream = Stream::compute;
      } else if (s->s != "p2p") {
        throw TraceError(nd.where(rb.file) + ": ct_stream '" + s->s + "' is not compute or p2p");
      }
    }
    in.category = Category::pp;
    in.peer = static_cast<int32_t>(peer);
    in.bytes = nd.has("comm_size") ? comm_bytes(nd, rb.file) : 0;
    if (send) depend(rb, in, deps);
    rb.instrs.push_back(in);
    const int32_t result = static_cast<int32_t>(rb.instrs.size() - 1);
    const P2pKey key = send ? P2pKey{r, static_cast<int>(peer), tag} : P2pKey{static_cast<int>(peer), r, tag};
    (send ? sends : recvs)[key].push_back(result);
    if (send) send_nodes[key].push_back(nd.id);
    return result;
  }

  // One rank's instructions, in topological order of its nodes.
  void emit_rank(int r) {
    RankBuild& rb = build[static_cast<size_t>(r)];
    rb.file = files[static_cast<size_t>(r)];
    rb.own_ends = own_ends;
    const auto& nds = nodes[static_cast<size_t>(r)];
    std::unordered_map<uint64_t, int32_t> done_index;  // node id -> instruction that completes it
    std::vector<bool> ends(static_cast<size_t>(steps), false);
    for (const size_t i : order[static_cast<size_t>(r)]) {
      const Node& nd = nds[i];
      rb.node = &nd;
      std::vector<int32_t> deps;
      for (const uint64_t d : nd.deps) deps.push_back(done_index.at(d));
      Instr in;
      if (own_ends) {
        in.step = static_cast<int16_t>(ct_int(nd, "ct_step", 0, steps - 1, rb.file));
      }
      in.chunk =
          static_cast<int16_t>(ct_int(nd, "ct_chunk", 0, std::numeric_limits<int16_t>::max(), rb.file));
      in.microbatch = ct_int(nd, "ct_microbatch", 0, std::numeric_limits<int64_t>::max(), rb.file);
      int32_t result = -1;
      if (nd.type == kMemLoad || nd.type == kMemStore) {
        result = emit_memory(rb, nd, in, deps);
      } else if (nd.type == kComp) {
        result = emit_compute(rb, nd, in, deps, ends);
        ++st.computes;
      } else if (measured_broadcast(nd)) {
        result = emit_compute(rb, nd, in, deps, ends);  // its duration, counted as exposed communication
        rb.instrs[static_cast<size_t>(result)].tp_seconds = rb.instrs[static_cast<size_t>(result)].seconds;
        ++st.measured_broadcasts;
      } else if (is_collective(nd)) {
        result = emit_collective(r, i, rb, nd, in, deps);
      } else if (nd.type == kSend || nd.type == kRecv) {
        result = emit_point_to_point(r, rb, nd, in, deps);
      } else {
        result = join(rb, deps);  // no time; passes dependencies on
      }
      done_index[nd.id] = result;
    }
    close_rank(rb, ends);
  }

  // The rank's step ends: the trace's own (each step must have one), or one after every sink.
  void close_rank(RankBuild& rb, const std::vector<bool>& ends) {
    if (own_ends) {
      for (int64_t k = 0; k < steps; ++k) {
        if (!ends[static_cast<size_t>(k)]) {
          throw TraceError(prefix(rb.file) + "no step_end node of step " + std::to_string(k) +
                           " (the trace has " + std::to_string(steps) + " steps)");
        }
      }
      return;
    }
    // Step end after every instruction: wait for the sinks (the others are done before them).
    std::vector<bool> used(rb.instrs.size(), false);
    for (const Instr& x : rb.instrs) {
      if (x.after >= 0) used[static_cast<size_t>(x.after)] = true;
      if (x.after2 >= 0) used[static_cast<size_t>(x.after2)] = true;
    }
    std::vector<int32_t> sinks;
    for (size_t k = 0; k < rb.instrs.size(); ++k) {
      if (!used[k]) sinks.push_back(static_cast<int32_t>(k));
    }
    Instr end;
    end.kind = InstrKind::compute;
    end.stream = Stream::compute;
    end.category = Category::step_end;
    depend(rb, end, sinks);
    rb.instrs.push_back(end);
  }

  // Link sends to receives.
  void link_point_to_point() {
    for (auto& [key, list] : sends) {
      const auto it = recvs.find(key);
      const size_t have = it == recvs.end() ? 0 : it->second.size();
      if (have != list.size()) {
        throw TraceError(prefix(files[static_cast<size_t>(key.src)]) + std::to_string(list.size()) +
                         " sends to rank " + std::to_string(key.dst) + " (tag " + std::to_string(key.tag) +
                         ", first node " + std::to_string(send_nodes[key].front()) + ") but " +
                         std::to_string(have) + " matching receives in " +
                         files[static_cast<size_t>(key.dst)]);
      }
      for (size_t k = 0; k < list.size(); ++k) {
        Instr& s = build[static_cast<size_t>(key.src)].instrs[static_cast<size_t>(list[k])];
        s.peer_instr = it->second[k];
      }
      st.point_to_point += static_cast<int>(list.size());
    }
    for (const auto& [key, list] : recvs) {
      if (sends.count(key) == 0) {
        throw TraceError(prefix(files[static_cast<size_t>(key.dst)]) + std::to_string(list.size()) +
                         " receives from rank " + std::to_string(key.src) + " (tag " +
                         std::to_string(key.tag) + ") without a matching send");
      }
    }
  }

  replay::StepProgram finish(ChakraStats* stats) {
    for (int r = 0; r < n; ++r) {
      replay::RankProgram rp;
      rp.gpu = r;
      rp.stage = 0;
      rp.instrs = std::move(build[static_cast<size_t>(r)].instrs);
      program.ranks.push_back(std::move(rp));
    }
    program.steps = static_cast<int>(steps);
    st.steps = program.steps;
    if (stats != nullptr) *stats = st;
    return program;
  }
};

}  // namespace

replay::StepProgram import_chakra_bytes(const std::string& where,
                                        const std::vector<std::pair<std::string, std::string>>& rank_files,
                                        ChakraStats* stats, const ChakraOptions& options) {
  ChakraImport im(where, options);
  im.decode(rank_files);
  im.index_collectives();
  im.build.resize(static_cast<size_t>(im.n));
  for (int r = 0; r < im.n; ++r) im.emit_rank(r);
  im.link_point_to_point();
  return im.finish(stats);
}

}  // namespace ct::trace

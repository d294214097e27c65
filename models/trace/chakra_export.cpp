// replay::StepProgram -> Chakra execution traces (mlcommons/chakra schema/protobuf/et_def.proto,
// version 0.0.4), serialized with the protobuf library from chakra_et.proto. A file is a
// sequence of messages, each prefixed by its varint length (Chakra's protolib encodeMessage):
// GlobalMetadata {1 version = "0.0.4", 2 attr ct_comm_size = "astra-sim"}, then one Node per
// instruction of the rank, in program order (fields at their proto3 defaults, such as id 0,
// are not written):
//   Node: 1 id = the instruction's index, 2 name, 3 type, 4 ctrl_deps, 5 data_deps (packed),
//         7 duration_micros, 10 attr (AttributeProto: 1 name, then 27 bool_val, 7 int32_val,
//         9 int64_val, 3 double_val or 29 string_val -- the value fields ASTRA-sim's
//         ETFeederNode reads each attribute from).
// Mapping (rank r is file <name>.r.et and runs on GPU r):
//   * compute -> COMP_NODE (4), duration_micros = round(seconds x 1e6); is_cpu_op = false.
//   * send -> COMM_SEND_NODE (5) with comm_src = r, comm_dst, comm_size = bytes (int64) and
//     comm_tag = the index of the matching receive in the receiver's program (unique per
//     pair, so the importer's and ASTRA-sim's (src, dst, tag) matching pairs them exactly).
//     The program has no sends to self (a pipeline stage handing over to its own next virtual
//     stage depends on the producing compute directly), which ASTRA-sim refuses.
//   * recv -> COMM_RECV_NODE (6) with comm_src, comm_dst = r, comm_size and comm_tag of the
//     matching send.
//   * collective -> COMM_COLL_NODE (7) with comm_type (ALL_REDUCE 0, ALL_GATHER 2, ALL_TO_ALL 6,
//     REDUCE_SCATTER 7; int64_val), pg_name = "g + 1" for program group g (ASTRA-sim reserves
//     "0" for all ranks; comm_group.json maps each pg_name of two or more ranks to its ranks),
//     comm_size in ASTRA-sim's convention (metadata ct_comm_size "astra-sim"): the buffer each
//     rank puts in (an all-gather's is 1/n of the gathered output; the others' the nccl-tests
//     size), rounded up to a multiple of ChakraExportOptions::size_multiple (64) so that
//     ASTRA-sim's preferred-dataset-splits chunks are whole (Sys::generate_collective adds a
//     whole extra chunk otherwise); ct_bytes holds the exact nccl-tests size for the importer.
//     A collective of a one-rank group (ZeRO with data_parallel 1) is an INVALID_NODE (type 0)
//     with ct_local_collective: ASTRA-sim never completes a collective of one rank, and
//     finishes an invalid node at once; the importer restores the collective.
//   * data_deps = after, after2; ctrl_deps = the previous instruction on the same stream,
//     because the executor runs each stream (compute, pipeline p2p, DP collectives) in order
//     and Chakra has no streams. Receives belong to no stream and have no dependencies.
// ClusterTwin attributes, ignored by other readers, make the round trip exact: ct_duration_s
// (double, the duration without rounding to microseconds), ct_tp_s (its exposed TP part),
// ct_category (forward, backward, optimizer, step_end), ct_stream "compute" (a send that
// holds the compute stream) or "collectives<k>" (a collective on an extra collective stream), ct_step,
// ct_chunk, ct_microbatch (written when not zero), ct_bytes, ct_local_collective. Every step keeps its
// step_end instruction (a COMP node of zero duration), so the importer rebuilds the steps and the step
// time is the last step's, as the step model reports it.
// What ASTRA-sim does differently (docs/chakra-export.md has the figures, checked by
// tests/python/test_astra_export.py with an independent interpreter of its rules): it runs one
// communication per GPU at a time (sends and collectives; receives are free) where the twin
// runs the p2p, DP and further collective streams concurrently; it does not slow compute while
// communication runs; no num_ops / tensor_size are written (the program carries calibrated
// durations, not FLOPs: replay it with the roofline model off); TP collectives are inside the
// compute durations (the program has them as exposed time, not as nodes); a trace holds `steps`
// consecutive steps, which ASTRA-sim runs as one graph; durations below 0.5 us round to 0 in
// duration_micros (ASTRA-sim runs them for 1 ns).
#include "models/trace/chakra_export.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "chakra_et.pb.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using replay::Category;
using replay::CollectiveKind;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

// ---- messages ------------------------------------------------------------------------------

chakra::AttributeProto& attr(chakra::Node& node, const std::string& name) {
  chakra::AttributeProto& a = *node.add_attr();
  a.set_name(name);
  return a;
}

void append_delimited(std::string& out, const google::protobuf::MessageLite& m) {
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(m, &stream);
}

const char* category_name(Category c) {
  switch (c) {
    case Category::forward:
      return "forward";
    case Category::backward:
      return "backward";
    case Category::optimizer:
      return "optimizer";
    case Category::step_end:
      return "step_end";
    case Category::pp:
      return "pp";
    case Category::dp:
      return "dp";
  }
  return "?";
}

chakra::CollectiveCommType comm_type(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce:
      return chakra::ALL_REDUCE;
    case CollectiveKind::all_gather:
      return chakra::ALL_GATHER;
    case CollectiveKind::all_to_all:
      return chakra::ALL_TO_ALL;
    case CollectiveKind::reduce_scatter:
      return chakra::REDUCE_SCATTER;
  }
  return chakra::ALL_REDUCE;
}

const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::all_to_all:
      return "all_to_all";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
  }
  return "?";
}

// Checks once what every rank's encoding relies on, and indexes receives by their send.
class Encoder {
 public:
  Encoder(const replay::StepProgram& p, int64_t size_multiple) : p_(p), multiple_(size_multiple) {
    if (size_multiple < 1)
      fail("size_multiple " + std::to_string(size_multiple) + " is not a positive number");
    if (p.folded) {
      fail(
          "a folded program (one replica standing for identical others) cannot be exported; build it "
          "unfolded");
    }
    const auto n = static_cast<int>(p.ranks.size());
    if (n == 0) fail("the program has no ranks");
    for (size_t g = 0; g < p.groups.size(); ++g) {
      if (p.groups[g].gpus != p.groups[g].simulated) {
        fail("group " + std::to_string(g) + " has members without a program (a folded or partial program)");
      }
      for (const int gpu : p.groups[g].gpus) {
        if (gpu < 0 || gpu >= n) fail("group " + std::to_string(g) + " names rank " + std::to_string(gpu));
      }
    }
    send_of_.resize(p.ranks.size());
    for (int r = 0; r < n; ++r) {
      const auto& rank = p.ranks[static_cast<size_t>(r)];
      if (rank.gpu != r) {
        fail("rank " + std::to_string(r) + " runs on GPU " + std::to_string(rank.gpu) + ", not " +
             std::to_string(r));
      }
      send_of_[static_cast<size_t>(r)].assign(rank.instrs.size(), {-1, -1});
    }
    // Each member of a group must issue the same collectives on it, in the same order: the
    // importer (and the executor) pair the k-th of every member.
    std::vector<std::vector<std::pair<CollectiveKind, int64_t>>> group_calls(p.groups.size());
    std::vector<int> first_member(p.groups.size(), -1);
    for (int r = 0; r < n; ++r) {
      std::vector<std::vector<std::pair<CollectiveKind, int64_t>>> mine(p.groups.size());
      check_rank(r, mine);
      for (size_t g = 0; g < p.groups.size(); ++g) {
        const auto& members = p.groups[g].gpus;
        if (std::find(members.begin(), members.end(), r) == members.end()) continue;
        if (first_member[g] < 0) {
          first_member[g] = r;
          group_calls[g] = std::move(mine[g]);
        } else if (group_calls[g] != mine[g]) {
          fail("rank " + std::to_string(r) + " issues other collectives of group " + std::to_string(g) +
               " than rank " + std::to_string(first_member[g]));
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      const auto& instrs = p.ranks[static_cast<size_t>(r)].instrs;
      for (size_t i = 0; i < instrs.size(); ++i) {
        if (instrs[i].kind == InstrKind::recv && send_of_[static_cast<size_t>(r)][i].first < 0) {
          fail(where(r, i) + "a receive no send delivers");
        }
      }
    }
  }

  [[nodiscard]] std::string encode(int r) const {
    const auto& instrs = p_.ranks[static_cast<size_t>(r)].instrs;
    std::string out;
    chakra::GlobalMetadata meta;
    meta.set_version(kChakraVersion);
    chakra::AttributeProto& convention = *meta.add_attr();
    convention.set_name("ct_comm_size");
    convention.set_string_val("astra-sim");
    append_delimited(out, meta);
    std::array<int64_t, replay::kStreamSlots> last_on{};  // previous instruction per stream
    last_on.fill(-1);
    chakra::Node node;
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr& in = instrs[i];
      node.Clear();
      node.set_id(i);
      attr(node, "is_cpu_op").set_bool_val(false);
      std::string name;
      switch (in.kind) {
        case InstrKind::compute:
          node.set_type(chakra::COMP_NODE);
          name = category_name(in.category);
          attr(node, "ct_category").set_string_val(category_name(in.category));
          attr(node, "ct_duration_s").set_double_val(in.seconds);
          if (in.tp_seconds > 0) attr(node, "ct_tp_s").set_double_val(in.tp_seconds);
          break;
        case InstrKind::send:
          node.set_type(chakra::COMM_SEND_NODE);
          name = "send_to_" + std::to_string(in.peer);
          attr(node, "comm_src").set_int32_val(r);
          attr(node, "comm_dst").set_int32_val(in.peer);
          attr(node, "comm_size").set_int64_val(in.bytes);
          attr(node, "comm_tag").set_int32_val(in.peer_instr);
          if (in.stream == Stream::compute) attr(node, "ct_stream").set_string_val("compute");
          break;
        case InstrKind::recv: {
          const auto [src, send] = send_of_[static_cast<size_t>(r)][i];
          node.set_type(chakra::COMM_RECV_NODE);
          name = "recv_from_" + std::to_string(src);
          attr(node, "comm_src").set_int32_val(src);
          attr(node, "comm_dst").set_int32_val(r);
          const Instr& matching = p_.ranks[static_cast<size_t>(src)].instrs[static_cast<size_t>(send)];
          attr(node, "comm_size").set_int64_val(matching.bytes);
          attr(node, "comm_tag").set_int32_val(static_cast<int32_t>(i));
          break;
        }
        case InstrKind::collective: {
          const auto members = static_cast<int64_t>(p_.groups[static_cast<size_t>(in.group)].gpus.size());
          name = kind_name(in.collective);
          if (members > 1) {
            node.set_type(chakra::COMM_COLL_NODE);
          } else {
            // ASTRA-sim never completes a collective of one rank: the node is an INVALID_NODE
            // (type 0, not written), which it finishes at once; ct_local_collective lets the
            // importer restore the collective.
            attr(node, "ct_local_collective").set_bool_val(true);
            name += " (one rank)";
          }
          attr(node, "comm_type").set_int64_val(comm_type(in.collective));
          attr(node, "comm_size").set_int64_val(astra_comm_size(in.bytes, in.collective, members));
          attr(node, "ct_bytes").set_int64_val(in.bytes);
          attr(node, "pg_name").set_string_val(std::to_string(in.group + 1));
          if (in.stream != Stream::dp) {
            attr(node, "ct_stream")
                .set_string_val("collectives" + std::to_string(static_cast<int>(in.stream) - 3));
          }
          break;
        }
      }
      name += " step" + std::to_string(in.step);
      const bool per_pass = in.category != Category::optimizer && in.category != Category::step_end;
      if (in.kind != InstrKind::collective && per_pass) {
        name += " chunk" + std::to_string(in.chunk) + " mb" + std::to_string(in.microbatch);
      }
      if (in.step != 0) attr(node, "ct_step").set_int64_val(in.step);
      if (in.chunk != 0) attr(node, "ct_chunk").set_int64_val(in.chunk);
      if (in.microbatch != 0) attr(node, "ct_microbatch").set_int64_val(in.microbatch);
      node.set_name(name);
      std::vector<uint64_t> data;
      for (const int32_t d : {in.after, in.after2}) {
        const auto id = static_cast<uint64_t>(d);
        if (d >= 0 && std::find(data.begin(), data.end(), id) == data.end()) data.push_back(id);
      }
      if (in.stream != Stream::none) {
        const int64_t prev = last_on[static_cast<size_t>(in.stream)];
        if (prev >= 0 && std::find(data.begin(), data.end(), static_cast<uint64_t>(prev)) == data.end()) {
          node.add_ctrl_deps(static_cast<uint64_t>(prev));
        }
        last_on[static_cast<size_t>(in.stream)] = static_cast<int64_t>(i);
      }
      for (const uint64_t d : data) node.add_data_deps(d);
      if (in.kind == InstrKind::compute)
        node.set_duration_micros(static_cast<uint64_t>(std::llround(in.seconds * 1e6)));
      append_delimited(out, node);
    }
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& what) { throw TraceError("export: " + what); }
  static std::string where(int r, size_t i) {
    return "rank " + std::to_string(r) + " instruction " + std::to_string(i) + ": ";
  }

  // Rank r's instructions: dependencies, steps, streams, sends (indexing their receives) and
  // collectives (collected per group into `calls`).
  void check_rank(int r, std::vector<std::vector<std::pair<CollectiveKind, int64_t>>>& calls) {
    const replay::StepProgram& p = p_;
    const auto n = static_cast<int>(p.ranks.size());
    const auto& instrs = p.ranks[static_cast<size_t>(r)].instrs;
    const auto size = static_cast<int32_t>(instrs.size());
    std::vector<bool> ends(static_cast<size_t>(std::max(p.steps, 0)), false);
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr& in = instrs[i];
      const std::string at = where(r, i);
      for (const int32_t d : {in.after, in.after2}) {
        if (d < -1 || d >= size || d == static_cast<int32_t>(i))
          fail(at + "bad dependency " + std::to_string(d));
      }
      if (in.step < 0 || in.step >= p.steps) {
        fail(at + "step " + std::to_string(in.step) + " outside 0.." + std::to_string(p.steps - 1));
      }
      if (in.chunk < 0 || in.microbatch < 0) fail(at + "negative chunk or micro-batch");
      if (in.bytes < 0) fail(at + "negative bytes");
      switch (in.kind) {
        case InstrKind::compute:
          if (in.stream != Stream::compute) fail(at + "compute off the compute stream");
          if (!std::isfinite(in.seconds) || in.seconds < 0 || !(in.tp_seconds >= 0)) {
            fail(at + "duration not a non-negative number");
          }
          if (in.category == Category::step_end) ends[static_cast<size_t>(in.step)] = true;
          break;
        case InstrKind::send: {
          if (in.stream != Stream::p2p && in.stream != Stream::compute) fail(at + "send on the DP stream");
          if (in.peer < 0 || in.peer >= n) fail(at + "send to rank " + std::to_string(in.peer));
          const auto& peer = p.ranks[static_cast<size_t>(in.peer)].instrs;
          if (in.peer_instr < 0 || in.peer_instr >= static_cast<int32_t>(peer.size()) ||
              peer[static_cast<size_t>(in.peer_instr)].kind != InstrKind::recv ||
              peer[static_cast<size_t>(in.peer_instr)].peer != r) {
            fail(at + "send whose peer_instr is not a receive from this rank");
          }
          auto& back = send_of_[static_cast<size_t>(in.peer)][static_cast<size_t>(in.peer_instr)];
          if (back.first >= 0) fail(at + "second send to the same receive");
          back = {r, static_cast<int32_t>(i)};
          break;
        }
        case InstrKind::recv:
          if (in.stream != Stream::none) fail(at + "receive on a stream");
          break;
        case InstrKind::collective: {
          if (in.stream != Stream::dp && static_cast<int>(in.stream) <= static_cast<int>(Stream::none)) {
            fail(at + "collective off the collective streams");
          }
          if (in.group < 0 || in.group >= static_cast<int32_t>(p.groups.size())) {
            fail(at + "collective of unknown group " + std::to_string(in.group));
          }
          const auto& members = p.groups[static_cast<size_t>(in.group)].gpus;
          if (std::find(members.begin(), members.end(), r) == members.end()) {
            fail(at + "collective of a group this rank is not in");
          }
          calls[static_cast<size_t>(in.group)].emplace_back(in.collective, in.bytes);
          break;
        }
      }
    }
    for (size_t k = 0; k < ends.size(); ++k) {
      if (!ends[k])
        fail("rank " + std::to_string(r) + " has no step_end instruction of step " + std::to_string(k));
    }
  }

  // comm_size in ASTRA-sim's convention (Sys::generate_collective reads it as the buffer each
  // rank puts in: an all-gather's is 1/n of the gathered output that `bytes` holds), rounded up
  // to a multiple of multiple_ so that its preferred-dataset-splits chunks are whole: a size
  // that is not a multiple of the splits gets one more chunk there.
  [[nodiscard]] int64_t astra_comm_size(int64_t bytes, CollectiveKind kind, int64_t members) const {
    const int64_t in =
        kind == CollectiveKind::all_gather ? (bytes + members - 1) / std::max<int64_t>(1, members) : bytes;
    return (in + multiple_ - 1) / multiple_ * multiple_;
  }

  const replay::StepProgram& p_;
  int64_t multiple_ = 1;
  std::vector<std::vector<std::pair<int, int32_t>>> send_of_;  // receive -> (sender rank, send)
};

std::string clean_name(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "trace" : out;
}

}  // namespace

std::string encode_chakra_rank(const replay::StepProgram& program, int rank) {
  if (rank < 0 || rank >= static_cast<int>(program.ranks.size())) {
    throw TraceError("export: rank " + std::to_string(rank) + " outside 0.." +
                     std::to_string(program.ranks.size() - 1));
  }
  return Encoder(program, kAstraSizeMultiple).encode(rank);
}

ChakraExportResult export_chakra(const replay::StepProgram& program, const std::string& directory,
                                 const ChakraExportOptions& options) {
  namespace fs = std::filesystem;
  const Encoder encoder(program, options.size_multiple);
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory, ec))
    throw TraceError("export: " + directory + ": cannot create the directory");
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string f = entry.path().filename().string();
    if (f.size() >= 3 && f.compare(f.size() - 3, 3, ".et") == 0) {
      throw TraceError("export: " + directory + ": already holds .et files (" + f +
                       "); choose an empty directory, the importer reads every .et file in it");
    }
  }
  ChakraExportResult res;
  res.directory = directory;
  res.name = clean_name(options.name);
  res.ranks = static_cast<int>(program.ranks.size());
  res.steps = program.steps;
  res.process_groups = static_cast<int>(program.groups.size());
  for (int r = 0; r < res.ranks; ++r) {
    const std::string path = (fs::path(directory) / (res.name + "." + std::to_string(r) + ".et")).string();
    const std::string bytes = encoder.encode(r);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw TraceError("export: " + path + ": write failed");
    res.files.push_back(path);
    res.bytes += static_cast<int64_t>(bytes.size());
    for (const Instr& in : program.ranks[static_cast<size_t>(r)].instrs) {
      ++res.nodes;
      (in.kind == InstrKind::compute ? res.computes
       : in.kind == InstrKind::send  ? res.sends
       : in.kind == InstrKind::recv  ? res.recvs
                                     : res.collectives) += 1;
    }
  }
  if (options.comm_group_file) {
    res.comm_group_file = (fs::path(directory) / "comm_group.json").string();
    std::ofstream out(res.comm_group_file);
    out << "{";
    bool first = true;
    for (size_t g = 0; g < program.groups.size(); ++g) {
      if (program.groups[g].gpus.size() < 2) continue;  // exported as no-op nodes, see encode()
      out << (first ? "\n " : ",\n ") << "\"" << g + 1 << "\": [";
      first = false;
      for (size_t k = 0; k < program.groups[g].gpus.size(); ++k)
        out << (k > 0 ? ", " : "") << program.groups[g].gpus[k];
      out << "]";
    }
    out << "\n}\n";
    out.close();
    if (!out) throw TraceError("export: " + res.comm_group_file + ": write failed");
  }
  return res;
}

}  // namespace ct::trace

// Chakra execution traces (ASTRA-sim format) -> replay::StepProgram.
//
// Files: every `<name>.<rank>.et` in the directory, one <name>, ranks 0..N-1; rank r runs on
// GPU r. Each file is a sequence of varint-length-prefixed protobuf messages: one
// GlobalMetadata (field 1 version), then Nodes. The wire format is decoded here (varint,
// 64-bit, length-delimited, 32-bit; unknown fields skipped) from the Chakra schema's field
// numbers:
//   Node: 1 id, 2 name, 3 type, 4 ctrl_deps, 5 data_deps (repeated uint64, packed or not),
//         7 duration_micros, 10 attr (AttributeProto).
//   AttributeProto: 1 name; value 3 double, 5 float, 7 int32, 9 int64, 11 uint32, 13 uint64,
//         15 sint32, 17 sint64 (zigzag), 19 fixed32, 21 fixed64, 23 sfixed32, 25 sfixed64,
//         27 bool, 29 string (list values are skipped).
//   NodeType: 4 COMP, 5 COMM_SEND, 6 COMM_RECV, 7 COMM_COLL; others (metadata, memory, ...)
//         take no time and only pass their dependencies on.
//   CollectiveCommType (attr comm_type): 0 ALL_REDUCE, 2 ALL_GATHER, 6 ALL_TO_ALL,
//         7 REDUCE_SCATTER; others are an error.
// Rules:
//   * Dependencies are ctrl_deps and data_deps together; nodes are emitted in topological
//     order (file order among ready nodes). Up to two become after/after2; more are joined
//     through zero-second join instructions (see trace_import.h) on the compute stream.
//   * COMP: compute stream, duration_micros as measured (no roofline from num_ops).
//   * COMM_COLL: dp stream, bytes = comm_size taken as the nccl-tests buffer per rank. The k-th
//     collective of process group pg_name (attr; absent = all ranks) on each rank forms one
//     group with the k-th of every other rank that has one; kind and size must agree.
//     ALL_TO_ALL is the NCCL-like all-to-all of the collective engine.
//   * COMM_SEND (comm_dst, comm_size, comm_tag) on the p2p stream; COMM_RECV (comm_src,
//     comm_tag) belongs to no stream. The k-th send r->d with a tag matches the k-th receive on
//     d from r with that tag; an unmatched one is an error. A receive's own dependencies are
//     not modelled (it completes when the matching send is delivered).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "models/trace/file_io.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using replay::Category;
using replay::CollectiveKind;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

constexpr const char* kKey = "trace.path";

// ---- protobuf wire format ----------------------------------------------------------------

class Reader {
 public:
  Reader(const char* begin, const char* end, const std::string* where) : p_(begin), end_(end), where_(where) {}
  [[nodiscard]] bool done() const { return p_ >= end_; }
  [[nodiscard]] const char* pos() const { return p_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) fail("truncated varint");
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("varint longer than 10 bytes");
  }
  uint64_t fixed(int bytes) {
    if (end_ - p_ < bytes) fail("truncated fixed-width field");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p_[i])) << (8 * i);
    p_ += bytes;
    return v;
  }
  Reader sub() {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) fail("truncated length-delimited field");
    Reader r(p_, p_ + n, where_);
    p_ += n;
    return r;
  }
  std::string str() {
    Reader r = sub();
    return {r.p_, r.end_};
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case 0: varint(); break;
      case 1: fixed(8); break;
      case 2: sub(); break;
      case 5: fixed(4); break;
      default: fail("unsupported wire type " + std::to_string(wire));
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(std::string(kKey) + ": " + *where_ + ": corrupt protobuf: " + what);
  }

 private:
  const char* p_;
  const char* end_;
  const std::string* where_;
};

enum NodeType : uint32_t { kComp = 4, kSend = 5, kRecv = 6, kColl = 7 };

struct Attr {
  int64_t i = 0;
  double d = 0;
  std::string s;
  bool is_number = false;
};

struct Node {
  uint64_t id = 0;
  std::string name;
  uint32_t type = 0;
  std::vector<uint64_t> deps;
  uint64_t duration_us = 0;
  std::map<std::string, Attr> attr;

  [[nodiscard]] bool has(const std::string& k) const { return attr.count(k) != 0; }
  [[nodiscard]] int64_t integer(const std::string& k, const std::string& file) const {
    const auto it = attr.find(k);
    if (it == attr.end() || !it->second.is_number) {
      throw TraceError(std::string(kKey) + ": " + file + ": node " + std::to_string(id) + " (" + name +
                       ") lacks integer attribute " + k);
    }
    return it->second.i;
  }
};

Attr decode_attr(Reader r, std::string& name) {
  Attr a;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 2) {
      name = r.str();
    } else if (wire == 0 && (field == 7 || field == 9 || field == 11 || field == 13 || field == 27)) {
      a.i = static_cast<int64_t>(r.varint());
      if (field == 7) a.i = static_cast<int32_t>(a.i);
      a.d = static_cast<double>(a.i);
      a.is_number = true;
    } else if (wire == 0 && (field == 15 || field == 17)) {
      const uint64_t z = r.varint();
      a.i = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
      a.d = static_cast<double>(a.i);
      a.is_number = true;
    } else if (wire == 1 && (field == 3 || field == 21 || field == 25)) {
      const uint64_t v = r.fixed(8);
      if (field == 3) {
        std::memcpy(&a.d, &v, sizeof(double));
        a.i = static_cast<int64_t>(a.d);
      } else {
        a.i = static_cast<int64_t>(v);
        a.d = static_cast<double>(a.i);
      }
      a.is_number = true;
    } else if (wire == 5 && (field == 5 || field == 19 || field == 23)) {
      const auto v = static_cast<uint32_t>(r.fixed(4));
      if (field == 5) {
        float f = 0;
        std::memcpy(&f, &v, sizeof(float));
        a.d = f;
        a.i = static_cast<int64_t>(f);
      } else {
        a.i = field == 23 ? static_cast<int32_t>(v) : static_cast<int64_t>(v);
        a.d = static_cast<double>(a.i);
      }
      a.is_number = true;
    } else if (field == 29 && wire == 2) {
      a.s = r.str();
    } else {
      r.skip(wire);
    }
  }
  return a;
}

void decode_deps(Reader& r, uint32_t wire, std::vector<uint64_t>& out) {
  if (wire == 2) {  // packed
    Reader p = r.sub();
    while (!p.done()) out.push_back(p.varint());
  } else if (wire == 0) {
    out.push_back(r.varint());
  } else {
    r.skip(wire);
  }
}

Node decode_node(Reader r) {
  Node n;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const auto field = static_cast<uint32_t>(key >> 3);
    const auto wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 0) {
      n.id = r.varint();
    } else if (field == 2 && wire == 2) {
      n.name = r.str();
    } else if (field == 3 && wire == 0) {
      n.type = static_cast<uint32_t>(r.varint());
    } else if (field == 4 || field == 5) {
      decode_deps(r, wire, n.deps);
    } else if (field == 7 && wire == 0) {
      n.duration_us = r.varint();
    } else if (field == 10 && wire == 2) {
      std::string name;
      Attr a = decode_attr(r.sub(), name);
      n.attr[name] = std::move(a);
    } else {
      r.skip(wire);
    }
  }
  return n;
}

std::vector<Node> read_et(const std::string& path) {
  const std::string data = detail::read_file(path, kKey);
  if (data.empty()) throw TraceError(std::string(kKey) + ": " + path + ": empty file");
  Reader r(data.data(), data.data() + data.size(), &path);
  r.sub();  // GlobalMetadata
  std::vector<Node> nodes;
  while (!r.done()) nodes.push_back(decode_node(r.sub()));
  return nodes;
}

// ---- program building ----------------------------------------------------------------------

struct RankBuild {
  std::vector<Instr> instrs;
  std::string file;
};

// An instruction index standing for "all of deps done" (-1 = none), adding joins as needed.
int32_t join(RankBuild& rb, std::vector<int32_t> deps) {
  deps.erase(std::remove(deps.begin(), deps.end(), -1), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  if (deps.empty()) return -1;
  int32_t acc = deps[0];
  for (size_t k = 1; k < deps.size(); ++k) {
    Instr j;
    j.kind = InstrKind::compute;
    j.stream = Stream::compute;
    j.category = Category::step_end;
    j.after = acc;
    j.after2 = deps[k];
    rb.instrs.push_back(j);
    acc = static_cast<int32_t>(rb.instrs.size() - 1);
  }
  return acc;
}

// Sets in.after/after2 from deps (joining when more than two).
void depend(RankBuild& rb, Instr& in, std::vector<int32_t> deps) {
  deps.erase(std::remove(deps.begin(), deps.end(), -1), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  if (deps.size() > 2) {
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
    if (!index.emplace(nodes[i].id, i).second) {
      throw TraceError(std::string(kKey) + ": " + file + ": duplicate node id " + std::to_string(nodes[i].id));
    }
  }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const uint64_t d : nodes[i].deps) {
      const auto it = index.find(d);
      if (it == index.end()) {
        throw TraceError(std::string(kKey) + ": " + file + ": node " + std::to_string(nodes[i].id) +
                         " depends on unknown node " + std::to_string(d));
      }
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
  if (order.size() != nodes.size()) throw TraceError(std::string(kKey) + ": " + file + ": dependency cycle");
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

}  // namespace

replay::StepProgram import_chakra(const std::string& directory, ChakraStats* stats) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(directory, ec)) throw TraceError(std::string(kKey) + ": " + directory + ": no such directory");
  if (!fs::is_directory(directory, ec)) {
    throw TraceError(std::string(kKey) + ": " + directory + ": expected a directory of <name>.<rank>.et files");
  }
  std::map<int, std::string> files;
  std::string name;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string f = entry.path().filename().string();
    if (f.size() < 4 || f.compare(f.size() - 3, 3, ".et") != 0) continue;
    const std::string stem = f.substr(0, f.size() - 3);
    const size_t dot = stem.rfind('.');
    const std::string rank_text = dot == std::string::npos ? "" : stem.substr(dot + 1);
    if (rank_text.empty() || !std::all_of(rank_text.begin(), rank_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        rank_text.size() > 7) {
      throw TraceError(std::string(kKey) + ": " + entry.path().string() + ": expected <name>.<rank>.et");
    }
    const std::string base = stem.substr(0, dot);
    if (name.empty()) name = base;
    if (base != name) {
      throw TraceError(std::string(kKey) + ": " + directory + ": traces of two workloads (" + name + ", " + base + ")");
    }
    files[std::stoi(rank_text)] = entry.path().string();
  }
  if (files.empty()) throw TraceError(std::string(kKey) + ": " + directory + ": no <name>.<rank>.et files");
  const int n = static_cast<int>(files.size());
  for (int r = 0; r < n; ++r) {
    if (files.count(r) == 0) {
      throw TraceError(std::string(kKey) + ": " + directory + ": rank " + std::to_string(r) + " missing (" +
                       std::to_string(n) + " files, ranks must be 0.." + std::to_string(n - 1) + ")");
    }
  }

  std::vector<std::vector<Node>> nodes(static_cast<size_t>(n));
  std::vector<std::vector<size_t>> order(static_cast<size_t>(n));
  ChakraStats st;
  st.ranks = n;
  st.name = name;
  for (int r = 0; r < n; ++r) {
    nodes[static_cast<size_t>(r)] = read_et(files[r]);
    order[static_cast<size_t>(r)] = topo_order(nodes[static_cast<size_t>(r)], files[r]);
    st.nodes += static_cast<int>(nodes[static_cast<size_t>(r)].size());
  }

  // Collective instances: the k-th collective of a process group on each rank.
  std::map<std::pair<std::string, int>, CollInstance> instances;
  std::vector<std::map<size_t, std::pair<std::string, int>>> instance_of(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    std::map<std::string, int> seq;
    for (const size_t i : order[static_cast<size_t>(r)]) {
      const Node& nd = nodes[static_cast<size_t>(r)][i];
      if (nd.type != kColl) continue;
      const auto it = nd.attr.find("pg_name");
      const std::string pg = it == nd.attr.end() ? "" : it->second.s;
      const std::pair<std::string, int> key{pg, seq[pg]++};
      instances[key].members.emplace_back(r, i);
      instance_of[static_cast<size_t>(r)][i] = key;
    }
  }
  replay::StepProgram program;
  std::map<std::pair<std::string, int>, int32_t> group_of;
  for (auto& [key, inst] : instances) {
    const Node& first = nodes[static_cast<size_t>(inst.members[0].first)][inst.members[0].second];
    const std::string& f0 = files[inst.members[0].first];
    const int64_t type = first.integer("comm_type", f0);
    const int64_t size = first.integer("comm_size", f0);
    if (key.first.empty() && static_cast<int>(inst.members.size()) != n) {
      throw TraceError(std::string(kKey) + ": " + directory + ": collective #" + std::to_string(key.second) + " (" +
                       first.name + ") appears on " + std::to_string(inst.members.size()) + " of " +
                       std::to_string(n) + " ranks and has no pg_name");
    }
    replay::Group g;
    for (const auto& [r, i] : inst.members) {
      const Node& nd = nodes[static_cast<size_t>(r)][i];
      if (nd.integer("comm_type", files[r]) != type || nd.integer("comm_size", files[r]) != size) {
        throw TraceError(std::string(kKey) + ": " + files[r] + ": collective " + nd.name + " (#" +
                         std::to_string(key.second) + ") differs in comm_type or comm_size from rank " +
                         std::to_string(inst.members[0].first));
      }
      g.gpus.push_back(r);
      g.simulated.push_back(r);
    }
    ++st.collectives;
    if (type == 6) ++st.all_to_all;
    if (type != 0 && type != 2 && type != 6 && type != 7) {
      throw TraceError(std::string(kKey) + ": " + f0 + ": collective " + first.name + ": comm_type " +
                       std::to_string(type) +
                       " not supported (all_reduce 0, all_gather 2, all_to_all 6, reduce_scatter 7)");
    }
    group_of[key] = static_cast<int32_t>(program.groups.size());
    program.groups.push_back(std::move(g));
  }

  // Emission, per rank in topological order.
  std::vector<RankBuild> build(static_cast<size_t>(n));
  std::map<P2pKey, std::vector<int32_t>> sends, recvs;  // instruction indices, in order
  for (int r = 0; r < n; ++r) {
    RankBuild& rb = build[static_cast<size_t>(r)];
    rb.file = files[r];
    const auto& nds = nodes[static_cast<size_t>(r)];
    std::unordered_map<uint64_t, int32_t> done_index;  // node id -> instruction that completes it
    std::vector<int32_t> sinks_candidates;
    for (const size_t i : order[static_cast<size_t>(r)]) {
      const Node& nd = nds[i];
      std::vector<int32_t> deps;
      for (const uint64_t d : nd.deps) deps.push_back(done_index.at(d));
      Instr in;
      in.step = 0;
      int32_t result = -1;
      if (nd.type == kComp) {
        in.kind = InstrKind::compute;
        in.stream = Stream::compute;
        in.category = Category::forward;
        in.seconds = static_cast<double>(nd.duration_us) * 1e-6;
        depend(rb, in, deps);
        rb.instrs.push_back(in);
        result = static_cast<int32_t>(rb.instrs.size() - 1);
      } else if (nd.type == kColl) {
        const auto key = instance_of[static_cast<size_t>(r)].at(i);
        const int64_t size = nd.integer("comm_size", rb.file);
        const auto git = group_of.find(key);
        {
          const int64_t type = nd.integer("comm_type", rb.file);
          in.kind = InstrKind::collective;
          in.stream = Stream::dp;
          in.category = Category::dp;
          in.collective = type == 0   ? CollectiveKind::all_reduce
                          : type == 2 ? CollectiveKind::all_gather
                          : type == 6 ? CollectiveKind::all_to_all
                                      : CollectiveKind::reduce_scatter;
          in.group = git->second;
          in.bytes = size;
          depend(rb, in, deps);
          rb.instrs.push_back(in);
          result = static_cast<int32_t>(rb.instrs.size() - 1);
        }
      } else if (nd.type == kSend || nd.type == kRecv) {
        const bool send = nd.type == kSend;
        const int peer = static_cast<int>(nd.integer(send ? "comm_dst" : "comm_src", rb.file));
        if (peer < 0 || peer >= n) {
          throw TraceError(std::string(kKey) + ": " + rb.file + ": node " + std::to_string(nd.id) + " (" + nd.name +
                           ") names rank " + std::to_string(peer) + ", outside 0.." + std::to_string(n - 1));
        }
        const int64_t tag = nd.has("comm_tag") ? nd.integer("comm_tag", rb.file) : 0;
        in.kind = send ? InstrKind::send : InstrKind::recv;
        in.stream = send ? Stream::p2p : Stream::none;
        in.category = Category::pp;
        in.peer = peer;
        in.bytes = nd.has("comm_size") ? nd.integer("comm_size", rb.file) : 0;
        if (send) depend(rb, in, deps);
        rb.instrs.push_back(in);
        result = static_cast<int32_t>(rb.instrs.size() - 1);
        (send ? sends : recvs)[send ? P2pKey{r, peer, tag} : P2pKey{peer, r, tag}].push_back(result);
      } else {
        result = join(rb, deps);  // no time; passes dependencies on
      }
      done_index[nd.id] = result;
    }
    // Step end after every instruction: join all of them (only sinks are needed, but the
    // join of everything is the same wait).
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
  for (auto& [key, list] : sends) {
    const auto it = recvs.find(key);
    const size_t have = it == recvs.end() ? 0 : it->second.size();
    if (have != list.size()) {
      throw TraceError(std::string(kKey) + ": " + directory + ": " + std::to_string(list.size()) + " sends from rank " +
                       std::to_string(key.src) + " to rank " + std::to_string(key.dst) + " (tag " +
                       std::to_string(key.tag) + ") but " + std::to_string(have) + " matching receives");
    }
    for (size_t k = 0; k < list.size(); ++k) {
      Instr& s = build[static_cast<size_t>(key.src)].instrs[static_cast<size_t>(list[k])];
      s.peer_instr = it->second[k];
    }
    st.point_to_point += static_cast<int>(list.size());
  }
  for (const auto& [key, list] : recvs) {
    if (sends.count(key) == 0) {
      throw TraceError(std::string(kKey) + ": " + directory + ": " + std::to_string(list.size()) +
                       " receives on rank " + std::to_string(key.dst) + " from rank " + std::to_string(key.src) +
                       " (tag " + std::to_string(key.tag) + ") without a matching send");
    }
  }
  for (int r = 0; r < n; ++r) {
    replay::RankProgram rp;
    rp.gpu = r;
    rp.stage = 0;
    rp.instrs = std::move(build[static_cast<size_t>(r)].instrs);
    program.ranks.push_back(std::move(rp));
  }
  program.steps = 1;
  if (stats != nullptr) *stats = st;
  return program;
}

}  // namespace ct::trace

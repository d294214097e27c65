// Chakra export and import: a generated training step written as Chakra ET and read back must
// replay to the same step time (bit for bit) on the same cluster and network; the shipped
// ASTRA-sim collectives must agree with the nccl-tests model; corrupt, truncated and
// wrong-version files must be errors naming the file and the byte offset or node.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "chakra_et.pb.h"
#include "models/collective/nccl_tests.h"
#include "models/replay/step_model.h"
#include "models/replay/tests/fixtures.h"
#include "models/trace/chakra_export.h"
#include "models/trace/tests/trace_test_util.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using testing::error_of;
using testing::temp_dir;

namespace fs = std::filesystem;
using replay::InstrKind;

const std::string kData = "tests/data/traces/";

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::map<InstrKind, int> kinds(const replay::StepProgram& p) {
  std::map<InstrKind, int> out;
  for (const auto& r : p.ranks) {
    for (const auto& in : r.instrs) ++out[in.kind];
  }
  return out;
}

struct Case {
  const char* what;
  int tp, pp, dp, v, zero, steps;
  int64_t gbs;
};

// TP 2 x PP 2 x DP 4 on two 8-GPU nodes: the pipeline's sends cross the fabric (stage s is
// node s), the DP collectives stay on NVLink; ZeRO-0 all-reduces, ZeRO-1 reduce-scatters and
// all-gathers; the interleaved schedule adds sends between chunks of one stage pair.
TEST(ChakraExport, RoundTripReplaysToTheSameStepTime) {
  const Case cases[] = {{"1F1B, ZeRO-1, 2 steps", 2, 2, 4, 1, 1, 2, 16},
                        {"interleaved v=2, ZeRO-0, 1 step", 2, 2, 4, 2, 0, 1, 16}};
  for (const Case& c : cases) {
    for (const std::string mode : {"analytical", "flow"}) {
      replay::StepInput in;
      in.job = replay::testing::small_job(c.tp, c.pp, c.dp, c.v, c.gbs);
      in.job.parallelism.zero_stage = c.zero;
      in.cluster = replay::testing::small_cluster(2);
      in.network_mode = mode;
      in.program.steps = c.steps;
      in.program.fold = false;
      const replay::StepProgram original = replay::build_program(in);
      const fs::path dir = temp_dir("ct_chakra_io", "roundtrip", false);
      ChakraExportOptions eo;
      eo.name = "gpt small";
      const ChakraExportResult ex = export_chakra(original, dir.string(), eo);
      ASSERT_EQ(ex.ranks, 16);
      EXPECT_EQ(ex.name, "gpt_small");
      EXPECT_TRUE(fs::exists(dir / "gpt_small.15.et"));
      EXPECT_TRUE(fs::exists(dir / "comm_group.json"));
      EXPECT_GT(ex.sends, 0);
      EXPECT_EQ(ex.sends, ex.recvs);
      EXPECT_GT(ex.collectives, 0);

      ChakraStats st;
      const replay::StepProgram imported = import_chakra(dir.string(), &st);
      EXPECT_EQ(st.name, "gpt_small");
      EXPECT_EQ(st.steps, c.steps);
      EXPECT_EQ(st.point_to_point, ex.sends);
      EXPECT_EQ(imported.steps, original.steps);
      // Same instructions, kind by kind and rank by rank (no join added, no step end appended).
      EXPECT_EQ(kinds(imported), kinds(original));
      ASSERT_EQ(imported.ranks.size(), original.ranks.size());
      for (size_t r = 0; r < original.ranks.size(); ++r) {
        const auto& a = original.ranks[r].instrs;
        const auto& b = imported.ranks[r].instrs;
        ASSERT_EQ(a.size(), b.size()) << "rank " << r;
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].kind, b[i].kind);
          EXPECT_EQ(a[i].stream, b[i].stream);
          EXPECT_EQ(a[i].category, b[i].category);
          EXPECT_EQ(a[i].step, b[i].step);
          EXPECT_EQ(a[i].seconds, b[i].seconds);  // exact: ct_duration_s is the double itself
          EXPECT_EQ(a[i].tp_seconds, b[i].tp_seconds);
          if (a[i].kind == InstrKind::send) {
            EXPECT_EQ(a[i].peer, b[i].peer);
            EXPECT_EQ(a[i].peer_instr, b[i].peer_instr);
          }
          if (a[i].kind != InstrKind::recv) {
            EXPECT_EQ(a[i].bytes, b[i].bytes);
          }
        }
      }

      const TraceRunResult ra = run_trace_program(original, in.cluster, mode);
      const TraceRunResult rb = run_trace_program(imported, in.cluster, mode);
      const replay::StepResult model = replay::simulate_step(in);
      std::printf(
          "[ %s, %s ] step model %.9f s, original program %.9f s, exported+imported %.9f s "
          "(%d ranks, %lld nodes, %lld bytes)\n",
          c.what, mode.c_str(), model.step_time_s, ra.step_time_s, rb.step_time_s, ex.ranks,
          static_cast<long long>(ex.nodes), static_cast<long long>(ex.bytes));
      EXPECT_GT(ra.step_time_s, 0.0);
      EXPECT_NEAR(rb.step_time_s, ra.step_time_s, 1e-12 * ra.step_time_s) << c.what << ", " << mode;
      EXPECT_NEAR(model.step_time_s, ra.step_time_s, 1e-12 * ra.step_time_s) << c.what << ", " << mode;
      ASSERT_EQ(ra.execution.ranks.size(), rb.execution.ranks.size());
      for (size_t r = 0; r < ra.execution.ranks.size(); ++r) {
        EXPECT_EQ(ra.execution.ranks[r].step_end_s, rb.execution.ranks[r].step_end_s) << "rank " << r;
        const auto& x = ra.execution.ranks[r].last_step;
        const auto& y = rb.execution.ranks[r].last_step;
        EXPECT_EQ(x.compute_s, y.compute_s);
        EXPECT_EQ(x.bubble_s, y.bubble_s);
        EXPECT_EQ(x.exposed_pp_comm_s, y.exposed_pp_comm_s);
        EXPECT_EQ(x.exposed_dp_comm_s, y.exposed_dp_comm_s);
        EXPECT_EQ(x.other_s, y.other_s);
      }
      EXPECT_EQ(ra.execution.collectives.size(), rb.execution.collectives.size());
      fs::remove_all(dir);
    }
  }
}

// Any step program exports, imported traces included: ASTRA-sim's collectives and a Kineto
// profile (idle gaps and all) come back as the same program and the same step time.
TEST(ChakraExport, ImportedTracesRoundTrip) {
  const replay::StepProgram sources[] = {import_chakra(kData + "chakra/all_reduce_8npus_1MB"),
                                         import_chakra(kData + "chakra/all_to_all_16npus_1MB"),
                                         import_kineto(kData + "kineto/kineto_gpt1.3b_h200.json.gz")};
  const network::ClusterSpec cluster = replay::testing::small_cluster(2);
  for (const replay::StepProgram& p : sources) {
    const fs::path dir = temp_dir("ct_chakra_io", "reexport", false);
    export_chakra(p, dir.string());
    const replay::StepProgram q = import_chakra(dir.string());
    EXPECT_EQ(q.instruction_count(), p.instruction_count());
    EXPECT_EQ(kinds(q), kinds(p));
    const double a = run_trace_program(p, cluster, "flow").step_time_s;
    const double b = run_trace_program(q, cluster, "flow").step_time_s;
    EXPECT_GT(a, 0.0);
    EXPECT_EQ(a, b) << p.ranks.size() << " ranks";
    fs::remove_all(dir);
  }
}

// The attributes ASTRA-sim's ETFeederNode reads are written in the value fields it reads them
// from, byte for byte as in ASTRA-sim's own microbenchmark traces.
TEST(ChakraExport, AttributesUseTheFieldsAstraSimReads) {
  replay::StepInput in;
  in.job = replay::testing::small_job(2, 2, 2, 1, 8);
  in.cluster = replay::testing::small_cluster(1);
  in.program.steps = 1;
  const replay::StepProgram p = replay::build_program(in);
  const std::string rank0 = encode_chakra_rank(p, 0);
  // GlobalMetadata {version "0.0.4", attr ct_comm_size "astra-sim"}, length-prefixed, first.
  EXPECT_EQ(rank0.substr(1, 7), std::string("\x0a\x05"
                                            "0.0.4",
                                            7));
  EXPECT_EQ(rank0.find("ct_comm_size"), 12U);  // after attr (field 2) and AttributeProto.name headers
  // is_cpu_op: bool_val (field 27), false -- the same bytes as all_reduce.0.et.
  const std::string is_cpu_op("\x0a\x09is_cpu_op\xd8\x01\x00", 14);
  EXPECT_NE(rank0.find(is_cpu_op), std::string::npos);
  EXPECT_NE(read_bytes(kData + "chakra/all_reduce_8npus_1MB/all_reduce.0.et").find(is_cpu_op),
            std::string::npos);
  // comm_type: int64_val (field 9); comm_src / comm_dst / comm_tag: int32_val (field 7);
  // pg_name: string_val (field 29).
  EXPECT_NE(rank0.find(std::string("\x0a\x09"
                                   "comm_type\x48",
                                   12)),
            std::string::npos);
  EXPECT_NE(rank0.find(std::string("\x0a\x09"
                                   "comm_size\x48",
                                   12)),
            std::string::npos);
  EXPECT_NE(rank0.find(std::string("\x0a\x08"
                                   "comm_dst\x38",
                                   11)),
            std::string::npos);
  EXPECT_NE(rank0.find(std::string("\x0a\x08"
                                   "comm_tag\x38",
                                   11)),
            std::string::npos);
  EXPECT_NE(rank0.find(std::string("\x0a\x07"
                                   "pg_name\xea\x01",
                                   11)),
            std::string::npos);
}

TEST(ChakraExport, RefusesWhatItCannotWrite) {
  replay::StepInput in;
  in.job = replay::testing::small_job(2, 2, 2, 1, 8);
  in.cluster = replay::testing::small_cluster(1);
  in.program.steps = 1;
  in.program.fold = true;
  const replay::StepProgram folded = replay::build_program(in);
  EXPECT_NE(error_of([&] { encode_chakra_rank(folded, 0); }).find("export: a folded program"),
            std::string::npos);
  in.program.fold = false;
  const replay::StepProgram p = replay::build_program(in);
  const fs::path dir = temp_dir("ct_chakra_io", "refuse", false);
  export_chakra(p, dir.string());
  EXPECT_NE(error_of([&] { export_chakra(p, dir.string()); }).find("already holds .et files"),
            std::string::npos);
  replay::StepProgram broken = p;
  broken.ranks[1].instrs.front().after = 100000;
  EXPECT_NE(
      error_of([&] { encode_chakra_rank(broken, 0); }).find("rank 1 instruction 0: bad dependency 100000"),
      std::string::npos);
  fs::remove_all(dir);
}

// ---- importer errors: file and byte offset (wire format) or node id (content) -------------

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
std::string message(const std::string& body) {
  std::string out;
  varint(out, body.size());
  return out + body;
}
std::string metadata(const std::string& version) {
  return message(std::string("\x0a", 1) + static_cast<char>(version.size()) + version);
}
std::string comp_node(uint64_t id, uint64_t duration_us, const std::string& extra = "") {
  std::string n("\x08", 1);
  varint(n, id);
  n += std::string("\x18\x04", 2);  // type COMP
  n += "\x38";
  varint(n, duration_us);
  return message(n + extra);
}

std::string string_attr(const std::string& name, const std::string& value) {
  std::string a("\x0a", 1);
  varint(a, name.size());
  a += name + "\xea\x01";  // string_val, field 29
  varint(a, value.size());
  a += value;
  std::string field("\x52", 1);  // Node.attr, field 10
  varint(field, a.size());
  return field + a;
}

std::string int_attr(const std::string& name, int64_t value) {
  std::string a("\x0a", 1);
  varint(a, name.size());
  a += name + "\x48";  // int64_val, field 9
  varint(a, static_cast<uint64_t>(value));
  std::string field("\x52", 1);
  varint(field, a.size());
  return field + a;
}

std::string import_error(const std::string& bytes) {
  return error_of([&] { import_chakra_bytes("dir", {{"t.0.et", bytes}}); });
}

TEST(ChakraImport, WireErrorsNameFileAndByte) {
  // A varint cut off: the metadata length byte says "more follows", then the file ends.
  EXPECT_EQ(import_error("\x80"),
            "trace.path: t.0.et: corrupt protobuf at byte 0: truncated length prefix of a GlobalMetadata");
  // A node whose length runs past the end: metadata (8 bytes), then 100 declared, 3 present.
  EXPECT_EQ(
      import_error(metadata("0.0.4") + "\x64\x08\x01\x18"),
      "trace.path: t.0.et: corrupt protobuf at byte 8: Node of 100 bytes runs past the end (3 bytes left)");
  // A varint cut off inside a node: the 2-byte node at byte 8 ends inside its id.
  EXPECT_EQ(import_error(metadata("0.0.4") + "\x02\x08\x80"),
            "trace.path: t.0.et: corrupt protobuf at byte 8: the 2-byte Node does not parse (a field cut "
            "short, or a "
            "malformed tag or group)");
  EXPECT_EQ(
      import_error(metadata("0.0.3") + comp_node(1, 5)),
      "trace.path: t.0.et: GlobalMetadata at byte 0: Chakra schema version '0.0.3'; this reader decodes "
      "0.0.4 and 1.0.0, or no version (Chakra's converter)");
  // The versions the tools that write this schema emit are read: Chakra's generator (1.0.0), its
  // PyTorch converter and ASTRA-sim's custom collectives (no version, a schema attribute).
  EXPECT_NO_THROW(import_chakra_bytes("dir", {{"t.0.et", metadata("1.0.0") + comp_node(1, 5)}}));
  std::string schema_attr(
      "\x0a\x06schema\xea\x01\x12"
      "1.0.2-chakra.0.0.4",
      29);
  const std::string converter =
      message(std::string("\x12", 1) + static_cast<char>(schema_attr.size()) + schema_attr);
  EXPECT_NO_THROW(import_chakra_bytes("dir", {{"t.0.et", converter + comp_node(1, 5)}}));
  // Chakra's PyTorch converter (no version): ctrl_deps are parent links, not dependencies (here
  // one against the data dependency: a cycle if read as an order); the CPU-side c10d:: node of a
  // collective (is_cpu_op, no comm_type) takes no time; a broadcast runs for its duration.
  {
    const std::string meta = message(std::string("\x12\x00", 2));          // GlobalMetadata {attr {}}
    std::string cpu_coll("\x08\x02\x18\x07\x2a\x01\x01\x22\x01\x03", 10);  // data [1], ctrl [3]
    cpu_coll += std::string("\x52\x0e\x0a\x09is_cpu_op\xd8\x01\x01", 16);
    std::string bcast("\x08\x03\x18\x07\x2a\x01\x02\x38\x07", 9);  // data [2], 7 us
    bcast += int_attr("comm_type", 5) + int_attr("comm_size", 64);
    ChakraStats st;
    const replay::StepProgram p = import_chakra_bytes(
        "dir", {{"t.0.et", meta + comp_node(1, 5) + message(cpu_coll) + message(bcast)}}, &st);
    EXPECT_EQ(st.dropped_ctrl_deps, 1);
    EXPECT_EQ(st.measured_broadcasts, 1);
    EXPECT_EQ(st.collectives, 0);
    EXPECT_NEAR(run_trace_program(p, replay::testing::small_cluster(1), "analytical").step_time_s, 12e-6,
                1e-12);
  }
  // No GlobalMetadata (ASTRA-sim's 2023 text converter): nodes of this schema are read from byte
  // 0; a node with the fields of the schema before 0.0.4 (a typed attribute list, field 11) is
  // refused by name.
  EXPECT_NO_THROW(import_chakra_bytes("dir", {{"t.0.et", comp_node(1, 5) + comp_node(2, 6)}}));
  const std::string old_attr("\x5a\x02\x0a\x00", 4);  // field 11: an attribute
  EXPECT_NE(import_error(comp_node(1, 5, old_attr))
                .find("no GlobalMetadata and fields this schema does not have: a file of the Chakra schema "
                      "before 0.0.4"),
            std::string::npos);
  EXPECT_EQ(import_error(std::string()), "trace.path: t.0.et: empty file");
  // Byte offsets hold for a real file: cut all_reduce.3.et inside its node.
  const std::string real = read_bytes(kData + "chakra/all_reduce_8npus_1MB/all_reduce.3.et");
  const std::string e = import_error(real.substr(0, 40));
  EXPECT_NE(e.find("trace.path: t.0.et: corrupt protobuf at byte 8: Node of "), std::string::npos) << e;
}

TEST(ChakraImport, ContentErrorsNameTheNode) {
  const std::string meta = metadata("0.0.4");
  std::string dep("\x2a\x01\x09", 3);  // data_deps packed [9]
  EXPECT_EQ(import_error(meta + comp_node(1, 5, dep)),
            "trace.path: t.0.et: node 1 (byte 8) depends on unknown node 9");
  EXPECT_EQ(import_error(meta + comp_node(1, 5) + comp_node(1, 6)),
            "trace.path: t.0.et: node 1 (byte 15): duplicate node id");
  const std::string self_dep("\x2a\x01\x01", 3);
  EXPECT_EQ(import_error(meta + comp_node(1, 5, self_dep)),
            "trace.path: t.0.et: node 1 (byte 8) is on a dependency cycle");
  EXPECT_EQ(import_error(meta + comp_node(2, uint64_t{1} << 62)),
            "trace.path: t.0.et: node 2 (byte 8): duration_micros 4611686018427387904 exceeds 3600 s");
  // A trace with its own step ends (ct_category step_end) cannot take a join (a step_end
  // instruction): a collective after three computes, a metadata node after two.
  const std::string ends =
      comp_node(1, 1) + comp_node(2, 1) + comp_node(3, 0, string_attr("ct_category", "step_end"));
  const std::string coll = std::string("\x08\x04\x18\x07\x2a\x03\x01\x02\x03", 9) + int_attr("comm_type", 0) +
                           int_attr("comm_size", 8);
  EXPECT_EQ(import_error(meta + ends + message(coll)),
            "trace.path: t.0.et: node 4 (byte 55): waits for 3 instructions beyond its stream's order; a "
            "trace that "
            "carries its own step ends (ct_category step_end) allows 2");
  const std::string metadata_node("\x08\x05\x18\x01\x2a\x02\x01\x02", 8);
  EXPECT_EQ(import_error(meta + ends + message(metadata_node)),
            "trace.path: t.0.et: node 5 (byte 55): waits for 2 instructions beyond its stream's order; a "
            "trace that "
            "carries its own step ends (ct_category step_end) allows 1");
  const std::string fine = meta + comp_node(1, 1) + comp_node(3, 0, string_attr("ct_category", "step_end"));
  EXPECT_NO_THROW(import_chakra_bytes("dir", {{"t.0.et", fine}}));
  std::string many;
  for (int k = 0; k < 3; ++k) many += comp_node(static_cast<uint64_t>(k), 1500000000ULL);  // 1500 s each
  EXPECT_NE(
      import_error(meta + many).find("node 2 (byte 30): durations on this rank add up to more than 3600 s"),
      std::string::npos);
}

// comm_size of an all-gather is what each rank puts in (Chakra's converter, ASTRA-sim), so the
// nccl-tests size is comm_size x members; ct_bytes (our export) is exact; a ClusterTwin export
// from before the ct_comm_size metadata (it has ct_category nodes) wrote the nccl-tests size.
TEST(ChakraImport, AllGatherSizeConventions) {
  const auto gather = [](uint64_t id, int64_t comm_size, const std::string& extra) {
    std::string n("\x08", 1);
    varint(n, id);
    n += std::string("\x18\x07", 2);  // type COMM_COLL
    return message(n + int_attr("comm_type", 2) + int_attr("comm_size", comm_size) +
                   string_attr("pg_name", "1") + extra);
  };
  const auto bytes_of = [](const replay::StepProgram& p) {
    for (const auto& in : p.ranks[0].instrs) {
      if (in.kind == InstrKind::collective) return in.bytes;
    }
    return int64_t{-1};
  };
  const std::string plain = metadata("0.0.4");
  const replay::StepProgram chakra = import_chakra_bytes(
      "dir", {{"t.0.et", plain + gather(1, 1000, "")}, {"t.1.et", plain + gather(1, 1000, "")}});
  EXPECT_EQ(bytes_of(chakra), 2000);
  const std::string step_end = comp_node(2, 0, string_attr("ct_category", "step_end"));
  const replay::StepProgram legacy =
      import_chakra_bytes("dir", {{"t.0.et", plain + gather(1, 1000, "") + step_end},
                                  {"t.1.et", plain + gather(1, 1000, "") + step_end}});
  EXPECT_EQ(bytes_of(legacy), 1000);
  const std::string exact = int_attr("ct_bytes", 1999);
  const replay::StepProgram ours = import_chakra_bytes(
      "dir", {{"t.0.et", plain + gather(1, 1024, exact)}, {"t.1.et", plain + gather(1, 1024, exact)}});
  EXPECT_EQ(bytes_of(ours), 1999);
}

// ct_duration_s gives the exact duration while it rounds to duration_micros; a trace whose
// duration_micros was edited since replays the edited value.
TEST(ChakraImport, ExactDurationUnlessEdited) {
  const double exact = 0.0012345678901;
  std::string attr(
      "\x0a\x0d"
      "ct_duration_s\x19",
      16);
  uint64_t bits = 0;
  std::memcpy(&bits, &exact, sizeof bits);
  for (int i = 0; i < 8; ++i) attr.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  std::string field("\x52", 1);  // attr (field 10, length-delimited)
  varint(field, attr.size());
  field += attr;
  const auto seconds = [&](uint64_t micros) {
    const auto p = import_chakra_bytes("dir", {{"t.0.et", metadata("0.0.4") + comp_node(1, micros, field)}});
    return p.ranks[0].instrs[0].seconds;
  };
  EXPECT_EQ(seconds(1235), exact);
  EXPECT_EQ(seconds(2000), 2000e-6);
}

// MEM_LOAD / MEM_STORE nodes (ASTRA-sim's remote memory) run on the compute stream for their
// duration, or tensor_size at the given memory rate; written here with our schema's classes.
TEST(ChakraImport, MemoryNodesMoveTheirTensorAtTheMemoryRate) {
  std::string bytes;
  google::protobuf::io::StringOutputStream out(&bytes);
  chakra::GlobalMetadata meta;
  meta.set_version(kChakraVersion);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(meta, &out);
  const auto node = [&](uint64_t id, chakra::NodeType type, uint64_t micros, int64_t tensor,
                        std::vector<uint64_t> deps) {
    chakra::Node n;
    n.set_id(id);
    n.set_type(type);
    n.set_duration_micros(micros);
    for (const uint64_t d : deps) n.add_data_deps(d);
    if (tensor >= 0) {
      chakra::AttributeProto* a = n.add_attr();
      a->set_name("tensor_size");
      a->set_uint64_val(static_cast<uint64_t>(tensor));
    }
    google::protobuf::util::SerializeDelimitedToZeroCopyStream(n, &out);
  };
  node(1, chakra::COMP_NODE, 100, -1, {});
  node(2, chakra::MEM_LOAD_NODE, 0, int64_t{64} << 20, {1});   // 64 MiB from host memory
  node(3, chakra::MEM_STORE_NODE, 40, int64_t{1} << 30, {2});  // its duration wins
  node(4, chakra::COMP_NODE, 200, -1, {3});
  ChakraOptions options;
  options.memory_bytes_per_s = 32e9;  // PCIe Gen4 x16
  ChakraStats st;
  const std::string file = bytes;
  const replay::StepProgram p = import_chakra_bytes("dir", {{"m.0.et", file}}, &st, options);
  EXPECT_EQ(st.memory, 2);
  EXPECT_EQ(st.computes, 2);
  const auto& in = p.ranks[0].instrs;
  ASSERT_GE(in.size(), 4U);
  EXPECT_DOUBLE_EQ(in[1].seconds, static_cast<double>(int64_t{64} << 20) / 32e9);
  EXPECT_DOUBLE_EQ(in[2].seconds, 40e-6);
  const TraceRunResult run = run_trace_program(p, replay::testing::small_cluster(1), "analytical");
  EXPECT_NEAR(run.step_time_s, 100e-6 + static_cast<double>(int64_t{64} << 20) / 32e9 + 40e-6 + 200e-6,
              1e-12);
  // Without a memory rate, or without a size or a duration, the node is named.
  EXPECT_NE(error_of([&] {
              import_chakra_bytes("dir", {{"m.0.et", file}});
            }).find("m.0.et: node 2 (byte "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              import_chakra_bytes("dir", {{"m.0.et", file}});
            }).find("no memory bandwidth to time it"),
            std::string::npos);
  node(5, chakra::MEM_LOAD_NODE, 0, -1, {4});  // starts where `file` ended
  const std::string e = error_of([&] { import_chakra_bytes("dir", {{"m.0.et", bytes}}, nullptr, options); });
  EXPECT_NE(e.find("node 5 (byte " + std::to_string(file.size()) +
                   "): memory node with neither duration_micros nor tensor_size"),
            std::string::npos)
      << e;
}

// The cluster must have a GPU for every rank; a smaller trace uses the first GPUs.
TEST(ChakraImport, RankCountAgainstTheCluster) {
  const replay::StepProgram p = import_chakra(kData + "chakra/all_to_all_16npus_1MB");
  EXPECT_EQ(error_of([&] { run_trace_program(p, replay::testing::small_cluster(1), "analytical"); }),
            "trace.path: the trace has 16 ranks but the cluster has 8 GPUs");
  const replay::StepProgram q = import_chakra(kData + "chakra/all_reduce_8npus_1MB");
  EXPECT_GT(run_trace_program(q, replay::testing::small_cluster(2), "analytical").step_time_s, 0.0);
}

// ASTRA-sim's 1 MB microbenchmarks against the nccl-tests model of the same collective over the
// same GPUs (all GPUs of the first nodes): both run the collective engine on the same network
// backend, the trace replay through the executor (which adds nothing to a lone collective),
// nccl-tests one collective per size on its own Simulation. They must agree within 0.1%.
TEST(ChakraImport, ShippedCollectivesMatchNcclTests) {
  struct Bench {
    const char* dir;
    collective::Op op;
    int nodes;
  };
  for (const Bench b : {Bench{"all_reduce_8npus_1MB", collective::Op::all_reduce, 1},
                        Bench{"all_to_all_16npus_1MB", collective::Op::all_to_all, 2}}) {
    const replay::StepProgram p = import_chakra(kData + "chakra/" + b.dir);
    const network::ClusterSpec spec = replay::testing::small_cluster(b.nodes);
    for (const std::string mode : {"analytical", "flow"}) {
      const TraceRunResult run = run_trace_program(p, spec, mode);
      collective::NcclTestsOptions o;
      o.network_mode = mode;
      o.op = b.op;
      o.nodes = b.nodes;
      o.min_bytes = o.max_bytes = int64_t{1} << 20;
      const auto rows = collective::run_nccl_tests(network::Cluster(spec), o);
      ASSERT_EQ(rows.size(), 1U);
      const double nccl = rows[0].time_us * 1e-6;
      std::printf("[ %s, %s ] Chakra replay %.3f us, nccl-tests model %.3f us (%+.4f%%), busbw %.1f GB/s\n",
                  b.dir, mode.c_str(), run.step_time_s * 1e6, nccl * 1e6,
                  100 * (run.step_time_s - nccl) / nccl, rows[0].busbw_GBps);
      EXPECT_NEAR(run.step_time_s, nccl, 1e-3 * nccl) << b.dir << ", " << mode;
    }
  }
}

}  // namespace
}  // namespace ct::trace

// Trace import: Chakra (ASTRA-sim microbenchmarks) and Kineto (one GPT step on one H200),
// replayed through the executor; closed forms for the collectives, the trace's own numbers for
// Kineto; clear errors for bad inputs. Fixtures: tests/data/traces (see its README).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>

#include "models/collective/collective.h"
#include "models/network/tests/fixtures.h"
#include "models/trace/tests/trace_test_util.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using testing::error_of;
using testing::temp_dir;

namespace fs = std::filesystem;
using network::testing::small_cluster;

const std::string kData = "tests/data/traces/";

TEST(Chakra, AllReduce8RanksIsOneGroupOf1MB) {
  ChakraStats st;
  const replay::StepProgram p = import_chakra(kData + "chakra/all_reduce_8npus_1MB", &st);
  EXPECT_EQ(st.ranks, 8);
  EXPECT_EQ(st.name, "all_reduce");
  EXPECT_EQ(st.collectives, 1);
  ASSERT_EQ(p.ranks.size(), 8U);
  ASSERT_EQ(p.groups.size(), 1U);
  EXPECT_EQ(p.groups[0].gpus.size(), 8U);
  int collectives = 0;
  for (const auto& r : p.ranks) {
    for (const auto& in : r.instrs) {
      if (in.kind != replay::InstrKind::collective) continue;
      ++collectives;
      EXPECT_EQ(in.collective, replay::CollectiveKind::all_reduce);
      EXPECT_EQ(in.bytes, 1 << 20);
      EXPECT_EQ(in.group, 0);
    }
    EXPECT_EQ(r.instrs.back().category, replay::Category::step_end);
  }
  EXPECT_EQ(collectives, 8);
}

TEST(Chakra, AllReduceReplayMatchesRingAlphaBeta) {
  const replay::StepProgram p = import_chakra(kData + "chakra/all_reduce_8npus_1MB");
  const network::ClusterSpec spec = small_cluster(1);
  const TraceRunResult run = run_trace_program(p, spec, "analytical");
  // The replay is one collective of the engine: 1 MiB inside one node is NCCL's ring with
  // LL (nccl_tuning.h), T = NCCL's LL ring latency + S / its LL bandwidth.
  const network::Cluster c(spec);
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  collective::CollectiveEngine engine(sim, *net, c);
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  const sim::Bytes bytes{1 << 20};
  const collective::Plan plan =
      engine.plan(collective::Op::all_reduce, group, bytes, collective::Algorithm::automatic);
  EXPECT_EQ(plan.algorithm, collective::Algorithm::ring);
  EXPECT_EQ(plan.protocol, collective::Protocol::ll);
  const double expected =
      engine.estimate(collective::Op::all_reduce, group, bytes, collective::Algorithm::automatic).seconds();
  std::printf("[ chakra all_reduce 8 x 1 MiB ] replay %.3f us, ring LL alpha-beta %.3f us (%+.2f%%)\n",
              run.step_time_s * 1e6, expected * 1e6, 100 * (run.step_time_s - expected) / expected);
  EXPECT_NEAR(run.step_time_s, expected, 0.03 * expected);
  const TraceRunResult flow = run_trace_program(p, spec, "flow");
  EXPECT_NEAR(flow.step_time_s, expected, 0.03 * expected) << "flow backend";
  ASSERT_EQ(run.execution.collectives.size(), 1U);
  EXPECT_EQ(run.execution.collectives[0].group_size, 8);
  EXPECT_EQ(run.execution.collectives[0].bytes, 1 << 20);
}

TEST(Chakra, AllToAll16RanksIsOneCollective) {
  ChakraStats st;
  const replay::StepProgram p = import_chakra(kData + "chakra/all_to_all_16npus_1MB", &st);
  EXPECT_EQ(st.ranks, 16);
  EXPECT_EQ(st.collectives, 1);
  EXPECT_EQ(st.all_to_all, 1);
  ASSERT_EQ(p.ranks.size(), 16U);
  ASSERT_EQ(p.groups.size(), 1U);
  EXPECT_EQ(p.groups[0].gpus.size(), 16U);
  // Two 8-GPU nodes: the replay is the collective engine's all-to-all (one pipelined chain
  // of the n(n-1) pairs, analytical backend), whose alpha-beta estimate it must match.
  const network::ClusterSpec spec = small_cluster(2);
  const TraceRunResult run = run_trace_program(p, spec, "analytical");
  const network::Cluster c(spec);
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  collective::CollectiveEngine engine(sim, *net, c);
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = i;
  const double expected =
      engine.estimate(collective::Op::all_to_all, all, sim::Bytes{1 << 20}, collective::Algorithm::ring)
          .seconds();
  std::printf("[ chakra all_to_all 16 x 1 MiB ] replay %.3f us, collective estimate %.3f us (%+.2f%%)\n",
              run.step_time_s * 1e6, expected * 1e6, 100 * (run.step_time_s - expected) / expected);
  EXPECT_NEAR(run.step_time_s, expected, 0.03 * expected);
}

// A minimal protobuf writer for synthetic Chakra traces (fields as in chakra.cpp).
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void field_varint(std::string& out, int field, uint64_t v) {
  varint(out, static_cast<uint64_t>(field) << 3);
  varint(out, v);
}
void field_bytes(std::string& out, int field, const std::string& b) {
  varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  varint(out, b.size());
  out += b;
}
std::string int_attr(const std::string& name, int64_t v) {
  std::string a;
  field_bytes(a, 1, name);
  field_varint(a, 9, static_cast<uint64_t>(v));
  return a;
}
std::string node(uint64_t id, int type, std::vector<uint64_t> deps, uint64_t dur_us,
                 const std::vector<std::string>& attrs) {
  std::string n;
  field_varint(n, 1, id);
  field_bytes(n, 2, "n" + std::to_string(id));
  field_varint(n, 3, static_cast<uint64_t>(type));
  std::string packed;
  for (const uint64_t d : deps) varint(packed, d);
  if (!packed.empty()) field_bytes(n, 5, packed);  // data_deps, packed
  if (dur_us > 0) field_varint(n, 7, dur_us);
  for (const auto& a : attrs) field_bytes(n, 10, a);
  return n;
}
void write_et(const fs::path& file, const std::vector<std::string>& nodes) {
  std::string out, meta;
  field_bytes(meta, 1, "0.0.4");
  varint(out, meta.size());
  out += meta;
  for (const auto& n : nodes) {
    varint(out, n.size());
    out += n;
  }
  std::ofstream(file, std::ios::binary) << out;
}

TEST(Chakra, SendRecvAndManyDependencies) {
  // Rank 0: three computes (10, 5, 7 us), then a 1 MiB send to rank 1 that waits for all three
  // (a join); rank 1: the receive, then 20 us of compute.
  const fs::path dir = temp_dir("ct_trace_test", "p2p");
  write_et(dir / "p2p.0.et",
           {node(1, 4, {}, 10, {}), node(2, 4, {}, 5, {}), node(3, 4, {}, 7, {}),
            node(4, 5, {1, 2, 3}, 0,
                 {int_attr("comm_dst", 1), int_attr("comm_size", 1 << 20), int_attr("comm_tag", 7)})});
  write_et(
      dir / "p2p.1.et",
      {node(1, 6, {}, 0, {int_attr("comm_src", 0), int_attr("comm_size", 1 << 20), int_attr("comm_tag", 7)}),
       node(2, 4, {1}, 20, {})});
  ChakraStats st;
  const replay::StepProgram p = import_chakra(dir.string(), &st);
  EXPECT_EQ(st.point_to_point, 1);
  const network::ClusterSpec spec = small_cluster(1);
  const TraceRunResult run = run_trace_program(p, spec, "analytical");
  const network::Cluster c(spec);
  sim::Simulation sim;
  const auto net = network::make_network("analytical", sim, c);
  const double send =
      net->path_latency(0, 1).seconds() + (1 << 20) * 8.0 / 0.95 / net->path_bandwidth(0, 1).bps();
  EXPECT_NEAR(run.execution.ranks[1].step_end_s[0], 22e-6 + send + 20e-6, 1e-9);
  EXPECT_NEAR(run.execution.ranks[0].step_end_s[0], 22e-6 + send, 1e-9);
  // A receive without its send is an error.
  write_et(dir / "p2p.0.et", {node(1, 4, {}, 10, {})});
  EXPECT_NE(error_of([&] { import_chakra(dir.string()); }).find("without a matching send"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Chakra, Errors) {
  EXPECT_NE(error_of([] { import_chakra("no/such/dir"); }).find("trace.path: no/such/dir: no such directory"),
            std::string::npos);
  const fs::path empty = temp_dir("ct_trace_test", "empty");
  EXPECT_NE(error_of([&] { import_chakra(empty.string()); }).find("no <name>.<rank>.et files"),
            std::string::npos);
  // Truncated protobuf: rank 3 cut in the middle of its node.
  const fs::path cut = temp_dir("ct_trace_test", "cut");
  const std::string src = kData + "chakra/all_reduce_8npus_1MB/";
  for (int r = 0; r < 8; ++r) {
    const std::string f = "all_reduce." + std::to_string(r) + ".et";
    fs::copy_file(src + f, cut / f);
  }
  fs::resize_file(cut / "all_reduce.3.et", 40);
  const std::string e = error_of([&] { import_chakra(cut.string()); });
  EXPECT_NE(e.find("trace.path: "), std::string::npos) << e;
  EXPECT_NE(e.find("all_reduce.3.et: corrupt protobuf at byte "), std::string::npos) << e;
  // A missing rank.
  fs::remove(cut / "all_reduce.3.et");
  EXPECT_NE(error_of([&] { import_chakra(cut.string()); }).find("rank 3 missing"), std::string::npos);
  // A cluster too small for the trace.
  const replay::StepProgram p = import_chakra(kData + "chakra/all_to_all_16npus_1MB");
  EXPECT_NE(error_of([&] {
              run_trace_program(p, small_cluster(1), "analytical");
            }).find("16 ranks but the cluster has 8"),
            std::string::npos);
  fs::remove_all(empty);
  fs::remove_all(cut);
}

TEST(Kineto, ReplayReproducesTheProfiledStep) {
  KinetoOptions opt;
  opt.execution_trace = kData + "kineto/pytorch_et_gpt1.3b_h200.json.gz";
  KinetoStats st;
  const replay::StepProgram p = import_kineto(kData + "kineto/kineto_gpt1.3b_h200.json.gz", opt, &st);
  ASSERT_EQ(p.ranks.size(), 1U);
  EXPECT_EQ(st.kernels, 1465);
  EXPECT_EQ(st.memsets, 421);
  EXPECT_EQ(st.nccl_kernels, 0);
  EXPECT_EQ(st.streams, 1);
  EXPECT_GT(st.backward, 0);
  EXPECT_GT(st.optimizer, 0);
  EXPECT_GT(st.et_nodes, 0);
  EXPECT_NEAR(st.span_s, st.gpu_busy_s + st.idle_s, 1e-6);  // ts are us since boot: ~1e-8 s rounding
  const network::ClusterSpec spec = small_cluster(1);
  const TraceRunResult run = run_trace_program(p, spec, "analytical");

  KinetoOptions busy_only;
  busy_only.keep_idle_gaps = false;
  const TraceRunResult busy = run_trace_program(
      import_kineto(kData + "kineto/kineto_gpt1.3b_h200.json.gz", busy_only), spec, "analytical");

  const double unprofiled = 0.30470919609069824;  // trace_meta.json
  std::printf(
      "[ kineto GPT-1.42B step, H200 ] GPU events %d (fwd %d, bwd %d, opt %d), busy %.3f ms, idle %.3f ms, "
      "span %.3f ms, overlap %.3f ms, ET nodes %d\n",
      st.kernels + st.memsets + st.memcpys, st.forward, st.backward, st.optimizer, st.gpu_busy_s * 1e3,
      st.idle_s * 1e3, st.span_s * 1e3, st.overlap_s * 1e3, st.et_nodes);
  std::printf(
      "[ kineto ] replay with idle gaps %.3f ms (span %+.3f%%, unprofiled %.3f ms: %+.2f%%); "
      "busy only %.3f ms (busy %+.3f%%, unprofiled %+.2f%%)\n",
      run.step_time_s * 1e3, 100 * (run.step_time_s - st.span_s) / st.span_s, unprofiled * 1e3,
      100 * (run.step_time_s - unprofiled) / unprofiled, busy.step_time_s * 1e3,
      100 * (busy.step_time_s - st.gpu_busy_s) / st.gpu_busy_s,
      100 * (busy.step_time_s - unprofiled) / unprofiled);
  EXPECT_NEAR(run.step_time_s, st.span_s, 1e-4 * st.span_s);
  EXPECT_NEAR(busy.step_time_s, st.gpu_busy_s, 1e-4 * st.gpu_busy_s);
  // The profiled span pays profiler overhead in its CPU-bound gaps; the unprofiled step lies
  // between GPU-busy time and the profiled span.
  EXPECT_LT(busy.step_time_s, unprofiled);
  EXPECT_GT(run.step_time_s, unprofiled);
  EXPECT_NEAR(run.step_time_s, unprofiled, 0.07 * unprofiled);
  EXPECT_NEAR(busy.step_time_s, unprofiled, 0.05 * unprofiled);
  // Busy GPU time the executor counts = the trace's kernels (idle instructions are step_end).
  EXPECT_NEAR(run.execution.ranks[0].last_step.compute_s + run.execution.ranks[0].last_step.optimizer_s,
              st.gpu_busy_s, 1e-6);
}

// Kernels of two CUDA streams that ran side by side keep their measured overlap: the replay
// is the union of the measured intervals, not their sum.
TEST(Kineto, ConcurrentStreamsKeepTheirMeasuredOverlap) {
  const fs::path dir = temp_dir("ct_kineto", "streams");
  std::string events;
  int corr = 0;
  for (const auto& [stream, ts, dur] : {std::tuple{7, 0, 100}, {9, 10, 50}, {7, 100, 50}, {9, 140, 60}}) {
    ++corr;
    events += std::string(events.empty() ? "" : ",") +
              "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":" + std::to_string(stream) +
              ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
              ",\"args\":{\"device\":0,\"stream\":" + std::to_string(stream) +
              ",\"correlation\":" + std::to_string(corr) + "}}";
  }
  std::ofstream(dir / "two_streams.json") << "{\"traceEvents\":[" << events << "]}";
  KinetoStats st;
  const replay::StepProgram p = import_kineto((dir / "two_streams.json").string(), {}, &st);
  EXPECT_EQ(st.streams, 2);
  EXPECT_NEAR(st.gpu_busy_s, 260e-6, 1e-12);  // the sum of the kernels
  EXPECT_NEAR(st.overlap_s, 60e-6, 1e-12);    // B inside A (50), D over C (10)
  EXPECT_NEAR(st.span_s, 200e-6, 1e-12);
  EXPECT_NEAR(run_trace_program(p, small_cluster(1), "analytical").step_time_s, 200e-6, 1e-12);
  fs::remove_all(dir);
}

// Three ProfilerSteps; the last launched no GPU work (skipped, not an error). Step 2's first
// event is a copy launched early that runs beside step 1's compute: the step's period starts at
// step 1's last GPU end, not at that copy. trace.step picks another step; one not in the trace
// is an error listing those there. The 2021 dialect (Kernel, Memcpy, Runtime, Operator) reads
// the same.
TEST(Kineto, ChoosesTheStepFromGpuActivity) {
  const fs::path dir = temp_dir("ct_kineto", "steps");
  const auto write = [&](const std::string& file, bool old) {
    const std::string kernel = old ? "Kernel" : "kernel", copy = old ? "Memcpy" : "gpu_memcpy",
                      runtime = old ? "Runtime" : "cuda_runtime",
                      step_cat = old ? "Operator" : "user_annotation";
    std::string ev;
    const auto add = [&](const std::string& cat, const std::string& name, double ts, double dur, int corr) {
      ev += std::string(ev.empty() ? "" : ",") + "{\"ph\":\"X\",\"cat\":\"" + cat + "\",\"name\":\"" + name +
            "\",\"pid\":0,\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
            ",\"args\":{\"device\":0,\"stream\":7,\"correlation\":" + std::to_string(corr) + "}}";
    };
    add(step_cat, "ProfilerStep#1", 0, 100, -1);
    add(step_cat, "ProfilerStep#2", 100, 100, -1);
    add(step_cat, "ProfilerStep#3", 200, 100, -1);
    add(runtime, "cudaLaunchKernel", 10, 1, 1);  // step 1: a kernel 20..150
    add(kernel, "gemm", 20, 130, 1);
    add(runtime, "cudaMemcpyAsync", 101, 1, 2);  // step 2: a prefetch copy 105..115 beside step 1's gemm
    add(copy, "Memcpy HtoD", 105, 10, 2);
    add(runtime, "cudaLaunchKernel", 102, 1, 3);  // then its kernel 150..190, after the gemm
    add(kernel, "gemm", 150, 40, 3);
    std::ofstream(dir / file) << "{\"traceEvents\":[" << ev << "]}";
  };
  for (const bool old : {false, true}) {
    const std::string file = old ? "old.json" : "new.json";
    write(file, old);
    const std::string path = (dir / file).string();
    KinetoStats st;
    const replay::StepProgram p = import_kineto(path, {}, &st);
    EXPECT_EQ(st.profiler_step, 2) << file;
    EXPECT_EQ(st.profiler_steps, 3);
    EXPECT_EQ(st.empty_steps, 1);
    EXPECT_NEAR(st.span_s, 40e-6, 1e-12) << file;  // 150..190: the period, not 105..190
    EXPECT_NEAR(st.before_step_s, 10e-6, 1e-12);
    EXPECT_EQ(st.memcpys, 1);
    EXPECT_NEAR(run_trace_program(p, small_cluster(1), "analytical").step_time_s, 40e-6, 1e-12);
    KinetoOptions first;
    first.step = 1;
    import_kineto(path, first, &st);
    EXPECT_EQ(st.profiler_step, 1);
    EXPECT_NEAR(st.span_s, 130e-6, 1e-12);
    KinetoOptions absent;
    absent.step = 3;
    EXPECT_NE(
        error_of([&] { import_kineto(path, absent); })
            .find("trace.step 3 is not a ProfilerStep with GPU work; the trace's ProfilerSteps: 1, 2, 3 (no "
                  "GPU work)"),
        std::string::npos);
  }
  fs::remove_all(dir);
}

TEST(Kineto, Errors) {
  const std::string missing = "no/such/trace.json.gz";
  EXPECT_NE(error_of([&] { import_kineto(missing); }).find("trace.path: no/such/trace.json.gz: no such file"),
            std::string::npos);
  const fs::path dir = temp_dir("ct_trace_test", "kineto");
  { std::ofstream(dir / "plain.json.gz") << "{\"traceEvents\": []}"; }
  const std::string e1 = error_of([&] { import_kineto((dir / "plain.json.gz").string()); });
  EXPECT_NE(e1.find("trace.path: "), std::string::npos);
  EXPECT_NE(e1.find("not a gzip file"), std::string::npos) << e1;
  {
    gzFile gz = gzopen((dir / "text.json.gz").c_str(), "wb");
    gzputs(gz, "this is not json");
    gzclose(gz);
  }
  const std::string e2 = error_of([&] { import_kineto((dir / "text.json.gz").string()); });
  EXPECT_NE(e2.find("text.json.gz: not JSON"), std::string::npos) << e2;
  // Truncated gzip: the first 1000 bytes of the real trace.
  {
    std::ifstream in(kData + "kineto/kineto_gpt1.3b_h200.json.gz", std::ios::binary);
    std::string head(1000, '\0');
    in.read(head.data(), 1000);
    std::ofstream(dir / "cut.json.gz", std::ios::binary) << head;
  }
  const std::string e3 = error_of([&] { import_kineto((dir / "cut.json.gz").string()); });
  EXPECT_NE(e3.find("cut.json.gz: corrupt gzip stream"), std::string::npos) << e3;
  {
    std::ofstream(dir / "nokernels.json")
        << "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"ts\": 1, \"dur\": 2}]}";
  }
  const std::string cpu_only = error_of([&] { import_kineto((dir / "nokernels.json").string()); });
  EXPECT_NE(cpu_only.find("no GPU kernel events"), std::string::npos);
  EXPECT_NE(cpu_only.find("the trace has cpu_op 1: a CPU-only profile"), std::string::npos) << cpu_only;
  KinetoOptions bad_et;
  bad_et.execution_trace = (dir / "text.json.gz").string();
  EXPECT_NE(error_of([&] {
              import_kineto(kData + "kineto/kineto_gpt1.3b_h200.json.gz", bad_et);
            }).find("trace.execution_trace: "),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ct::trace

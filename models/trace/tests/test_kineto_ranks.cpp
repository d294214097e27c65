// Multi-rank Kineto replay (kineto_ranks.cpp): a synthetic 4-rank step whose NCCL kernels
// become collectives on the fabric, with the closed-form step; and errors naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/network/tests/fixtures.h"
#include "models/trace/tests/trace_test_util.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

namespace fs = std::filesystem;
using network::testing::small_cluster;
using nlohmann::json;
using testing::error_of;
using testing::temp_dir;

json nccl_args(const std::string& name, const std::string& dtype, int64_t in, int64_t out,
               const std::string& pg, const std::string& ranks, int group) {
  return {{"Collective name", name},     {"dtype", dtype},      {"In msg nelems", in},
          {"Out msg nelems", out},       {"Group size", group}, {"Process Group Name", pg},
          {"Process Group Ranks", ranks}};
}

// Appends a launch call (CPU thread 1, 3 us, at `launch`) and its kernel on `stream`; `extra`
// joins the kernel's args.
void add_kernel(json& ev, int64_t corr, const std::string& name, double launch, double ts, double dur,
                int stream, const json& extra = json::object()) {
  ev.push_back({{"ph", "X"},
                {"cat", "cuda_runtime"},
                {"name", "cudaLaunchKernel"},
                {"pid", 1},
                {"tid", 1},
                {"ts", launch},
                {"dur", 3},
                {"args", {{"correlation", corr}}}});
  json args = {{"device", 0}, {"stream", stream}, {"correlation", corr}};
  args.update(extra);
  ev.push_back({{"ph", "X"},
                {"cat", "kernel"},
                {"name", name},
                {"pid", 0},
                {"tid", stream},
                {"ts", ts},
                {"dur", dur},
                {"args", args}});
}

// One rank (us): A [0,100]; all-reduce of 16 Mi floats (64 MiB) over 4 ranks launched after A
// and measured [100,400]; B [100,120] beside it; C [405,455] after it (5 us of CPU gap);
// a broadcast [455,465] (kept at its measured time); an all-gather of 1 Mi -> 2 Mi bf16 in
// {0,1} or {2,3} [470,570]; D [600,610] after it (30 us gap).
// args_on_op: the communication arguments sit on a record_param_comms CPU operator around the
// launch instead of on the kernel (profilers that do not copy them).
json rank_trace(int rank, int world = 4, bool args_on_op = false) {
  json ev = json::array();
  int64_t corr = 0;
  const auto kernel = [&](const std::string& name, double launch, double ts, double dur,
                          json extra = json::object(), int stream = 7) {
    if (args_on_op && !extra.empty()) {
      ev.push_back({{"ph", "X"},
                    {"cat", "cpu_op"},
                    {"name", "record_param_comms"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", launch - 1},
                    {"dur", 5},
                    {"args", extra}});
      extra = json::object();
    }
    add_kernel(ev, ++corr, name, launch, ts, dur, stream, extra);
  };
  const std::string pair = rank < 2 ? "[0, 1]" : "[2, 3]";
  kernel("gemm_A", -10, 0, 100);
  kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5, 100, 300,
         nccl_args("allreduce", "Float", 16 << 20, 16 << 20, "0", "[0, 1, 2, 3]", 4), 20);
  kernel("elementwise_B", 6, 100, 20);
  kernel("gemm_C", 398, 405, 50);
  kernel("ncclDevKernel_Broadcast_RING_LL", 450, 455, 10,
         nccl_args("broadcast", "Float", 1024, 1024, "0", "[0, 1, 2, 3]", 4), 20);
  kernel("ncclDevKernel_AllGather_RING_LL", 460, 470, 100,
         nccl_args("_allgather_base", "BFloat16", 1 << 20, 2 << 20, rank < 2 ? "1" : "2", pair, 2), 20);
  kernel("gemm_D", 590, 600, 10);
  return {{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", world}}},
          {"traceEvents", ev}};
}

struct RankDir {
  fs::path dir;
  explicit RankDir(const std::string& name, int ranks = 4) : dir(temp_dir("ct_kineto_ranks", name)) {
    for (int r = 0; r < ranks; ++r) put(r, rank_trace(r));
  }
  void put(int r, const json& doc) const {
    std::ofstream(dir / ("worker" + std::to_string(r) + ".pt.trace.json")) << doc.dump();
  }
  ~RankDir() { fs::remove_all(dir); }
};

TEST(KinetoRanks, CollectivesRunOnTheFabricInTheMeasuredOrder) {
  const RankDir files("closed_form");
  KinetoRanksStats st;
  const replay::StepProgram p = import_kineto_ranks(files.dir.string(), &st);
  ASSERT_EQ(p.ranks.size(), 4U);
  EXPECT_EQ(st.ranks, 4);
  EXPECT_EQ(st.collectives, 3);    // the all-reduce, the all-gather of {0,1} and of {2,3}
  EXPECT_EQ(st.nccl_kernels, 8);   // 2 per rank
  EXPECT_EQ(st.nccl_measured, 4);  // the broadcasts
  EXPECT_EQ(st.waits, 8);          // C and D on each rank
  EXPECT_NEAR(st.idle_s, 4 * 35e-6, 1e-12);
  EXPECT_NEAR(st.measured_step_s, 610e-6, 1e-12);
  ASSERT_EQ(p.groups.size(), 3U);
  EXPECT_EQ(p.groups[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    for (size_t i = 0; i < p.ranks[r].instrs.size(); ++i)
      EXPECT_LT(p.ranks[r].instrs[i].after, static_cast<int32_t>(i));
  }

  const TraceRunResult run = run_trace_program(p, small_cluster(1), "analytical");
  double all_reduce = 0, all_gather = 0;
  int gathers = 0;
  for (const auto& c : run.execution.collectives) {
    if (c.kind == replay::CollectiveKind::all_reduce) {
      EXPECT_EQ(c.bytes, int64_t{64} << 20);
      EXPECT_EQ(c.group_size, 4);
      all_reduce = c.end_s - c.start_s;
      EXPECT_NEAR(c.start_s, 100e-6, 1e-12);  // right after A, its only dependency
    } else {
      EXPECT_EQ(c.kind, replay::CollectiveKind::all_gather);
      EXPECT_EQ(c.bytes, int64_t{4} << 20);
      EXPECT_EQ(c.group_size, 2);
      all_gather = std::max(all_gather, c.end_s - c.start_s);
      ++gathers;
    }
  }
  EXPECT_EQ(gathers, 2);
  std::printf(
      "[ Kineto 4 ranks ] all-reduce 64 MiB %.1f us (measured 300), all-gather 4 MiB %.1f us (measured 100), "
      "step %.1f us (measured %.1f)\n",
      all_reduce * 1e6, all_gather * 1e6, run.step_time_s * 1e6, st.measured_step_s * 1e6);
  EXPECT_GT(all_reduce, 100e-6);  // 96 MiB over NVLink per rank: the fabric's time, not the 300 us measured
  // A, the all-reduce (B beside it), 5 us, C, the broadcast, the all-gather, 30 us, D.
  EXPECT_NEAR(run.step_time_s, 100e-6 + all_reduce + 5e-6 + 50e-6 + 10e-6 + all_gather + 30e-6 + 10e-6, 1e-9);
}

TEST(KinetoRanks, ArgumentsFromTheRecordParamCommsOperator) {
  const RankDir on_kernels("args_kernel"), on_ops("args_op");
  for (int r = 0; r < 4; ++r) on_ops.put(r, rank_trace(r, 4, true));
  KinetoRanksStats a, b;
  const replay::StepProgram p = import_kineto_ranks(on_kernels.dir.string(), &a);
  const replay::StepProgram q = import_kineto_ranks(on_ops.dir.string(), &b);
  EXPECT_EQ(b.collectives, 3);
  EXPECT_EQ(b.nccl_kernels, a.nccl_kernels);
  EXPECT_EQ(b.nccl_measured, a.nccl_measured);
  EXPECT_EQ(run_trace_program(p, small_cluster(1), "analytical").step_time_s,
            run_trace_program(q, small_cluster(1), "analytical").step_time_s);
}

// Two pipeline stages (us): rank 0 runs F [0,100] and sends 64 MiB of bf16 activations to
// rank 1 (measured [100,150]); rank 1's receive is posted early ([10,150]) and its G [152,252]
// waits for it (2 us of CPU gap). The transfer runs on the fabric (NVLink here): the step is
// F + the transfer + 2 us + G.
json stage_trace(int rank, int64_t send_elems = 32 << 20) {
  const json args = {{"Collective name", rank == 0 ? "send" : "recv"},
                     {rank == 0 ? "Dst Rank" : "Src Rank", 1 - rank},
                     {"dtype", "BFloat16"},
                     {"In msg nelems", rank == 0 ? send_elems : int64_t{32} << 20},
                     {"Out msg nelems", rank == 0 ? send_elems : int64_t{32} << 20},
                     {"Group size", 2},
                     {"Process Group Ranks", "[0, 1]"}};
  json ev = json::array();
  if (rank == 0) {
    add_kernel(ev, 1, "gemm_F", -10, 0, 100, 7);
    add_kernel(ev, 2, "ncclDevKernel_SendRecv", 5, 100, 50, 20, args);
  } else {
    add_kernel(ev, 1, "ncclDevKernel_SendRecv", 5, 10, 140, 20, args);
    add_kernel(ev, 2, "gemm_G", 20, 152, 100, 7);
  }
  return {{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}}, {"traceEvents", ev}};
}

TEST(KinetoRanks, SendsAndReceivesRunOnTheFabric) {
  const RankDir d("p2p", 0);
  d.put(0, stage_trace(0));
  d.put(1, stage_trace(1));
  KinetoRanksStats st;
  const replay::StepProgram p = import_kineto_ranks(d.dir.string(), &st);
  EXPECT_EQ(st.point_to_point, 1);
  EXPECT_EQ(st.nccl_measured, 0);
  EXPECT_EQ(st.waits, 1);
  EXPECT_NEAR(st.measured_p2p_s, 190e-6, 1e-12);
  const network::ClusterSpec cluster = small_cluster(1);
  const TraceRunResult run = run_trace_program(p, cluster, "analytical");
  // The NVLink transfer as the network tests state it: latency + bytes / (0.95 x rate).
  const double transfer = cluster.node.nvlink_latency.seconds() +
                          network::testing::wire_s(64.0 * (1 << 20), cluster.node.nvlink_rate.bps());
  std::printf("[ Kineto 2 stages ] 64 MiB activation send %.1f us (measured 50), step %.1f us\n",
              transfer * 1e6, run.step_time_s * 1e6);
  EXPECT_NEAR(run.step_time_s, 100e-6 + transfer + 2e-6 + 100e-6, 1e-9);
  // A size mismatch and a send without its receive name the files.
  d.put(0, stage_trace(0, 16 << 20));
  EXPECT_NE(error_of([&] {
              import_kineto_ranks(d.dir.string());
            }).find("send #0 to rank 1 carries 33554432 bytes, its receive 67108864"),
            std::string::npos);
  json lonely = stage_trace(1);
  lonely["traceEvents"].erase(lonely["traceEvents"].begin(),
                              lonely["traceEvents"].begin() + 2);  // drop the receive
  d.put(0, stage_trace(0));
  d.put(1, lonely);
  EXPECT_NE(error_of([&] {
              import_kineto_ranks(d.dir.string());
            }).find("1 sends to rank 1 but 0 receives from rank 0"),
            std::string::npos);
}

// Two process groups over the same two ranks whose kernels start in opposite orders on the
// two ranks (each communicator has its own NCCL stream): each group replays on its own
// collective stream, so neither blocks the other; a kernel after both waits for both.
TEST(KinetoRanks, ProcessGroupsInterleavedDifferentlyDoNotBlock) {
  const RankDir d("two_groups", 0);
  for (int rank = 0; rank < 2; ++rank) {
    json ev = json::array();
    for (const auto& [corr, pg] : {std::pair{1, "1"}, std::pair{2, "2"}}) {
      const double ts = (rank == 0) == (corr == 1) ? 100 : 105;
      add_kernel(ev, corr, "ncclDevKernel_allreduce", ts - 5, ts, 50, 20 + corr,
                 nccl_args("allreduce", "Float", 1 << 20, 1 << 20, pg, "[0, 1]", 2));
    }
    // A kernel that waited for both (they ended at 150 and 155): 45 us after the later one.
    add_kernel(ev, 3, "adam", 110, 200, 10, 7);
    d.put(rank, {{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
                 {"traceEvents", ev}});
  }
  KinetoRanksStats st;
  const replay::StepProgram p = import_kineto_ranks(d.dir.string(), &st);
  EXPECT_EQ(st.collectives, 2);
  EXPECT_EQ(st.waits, 2);  // the kernel on each rank, on both collectives
  const TraceRunResult run = run_trace_program(p, small_cluster(1), "analytical");
  ASSERT_EQ(run.execution.collectives.size(), 2U);
  const double last = std::max(run.execution.collectives[0].end_s, run.execution.collectives[1].end_s);
  EXPECT_NEAR(run.step_time_s, last + 45e-6 + 10e-6, 1e-12);
}

// PyTorch <= 2.1: record_param_comms without "Collective name" or message sizes. A single-tensor
// all-reduce is recovered from the kernel's name and the operator's "Input Dims" x "Input type"
// over every rank; a TensorList one (no dims) stays at its measured time.
TEST(KinetoRanks, LegacyRecordParamCommsFromTheKernelName) {
  const auto legacy = [](int rank, bool tensor_list) {
    json ev = json::array();
    const json args = tensor_list
                          ? json{{"Input Dims", json::array({json::array(), json::array()})},
                                 {"Input type", {"TensorList", "Scalar"}}}
                          : json{{"Input Dims", json::array({json::array({16 << 20}), json::array()})},
                                 {"Input type", {"float", "Scalar"}}};
    ev.push_back({{"ph", "X"},
                  {"cat", "cpu_op"},
                  {"name", "record_param_comms"},
                  {"pid", 1},
                  {"tid", 1},
                  {"ts", 4},
                  {"dur", 5},
                  {"args", args}});
    add_kernel(ev, 1, "gemm_A", -10, 0, 100, 7);
    add_kernel(ev, 2, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 5,
               100, 300, 20);
    add_kernel(ev, 3, "gemm_C", 398, 405, 50, 7);
    return json{{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 4}}},
                {"traceEvents", ev}};
  };
  for (const bool tensor_list : {false, true}) {
    const RankDir d(tensor_list ? "legacy_list" : "legacy_tensor");
    for (int r = 0; r < 4; ++r) d.put(r, legacy(r, tensor_list));
    KinetoRanksStats st;
    const replay::StepProgram p = import_kineto_ranks(d.dir.string(), &st);
    EXPECT_EQ(st.collectives, tensor_list ? 0 : 1);
    EXPECT_EQ(st.nccl_measured, tensor_list ? 4 : 0);
    if (!tensor_list) {
      ASSERT_EQ(p.groups.size(), 1U);
      EXPECT_EQ(p.groups[0].gpus.size(), 4U);
      for (const auto& in : p.ranks[0].instrs) {
        if (in.kind == replay::InstrKind::collective) {
          EXPECT_EQ(in.bytes, int64_t{64} << 20);
        }
      }
    }
  }
}

TEST(KinetoRanks, Errors) {
  const auto message = [](const RankDir& d) {
    return error_of([&] { import_kineto_ranks(d.dir.string()); });
  };
  {
    const RankDir d("no_info");
    json doc = rank_trace(2);
    doc.erase("distributedInfo");
    d.put(2, doc);
    EXPECT_NE(message(d).find("worker2.pt.trace.json: no distributedInfo.rank and world_size"),
              std::string::npos)
        << message(d);
  }
  {
    const RankDir d("world", 3);
    EXPECT_NE(message(d).find("distributedInfo.world_size is 4 but"), std::string::npos) << message(d);
    EXPECT_NE(message(d).find("holds 3 traces"), std::string::npos);
    // A subset of the job's ranks: what can be replayed and how is said.
    EXPECT_NE(message(d).find("a subset of the job's ranks"), std::string::npos) << message(d);
    EXPECT_NE(message(d).find("point trace.path at one rank's file"), std::string::npos) << message(d);
  }
  {
    const RankDir d("twice");
    d.put(3, rank_trace(1));
    EXPECT_NE(message(d).find("distributedInfo.rank 1 appears in two files"), std::string::npos)
        << message(d);
  }
  {
    const RankDir d("size");
    json doc = rank_trace(2);
    doc["traceEvents"][3]["args"]["In msg nelems"] = 1024;
    doc["traceEvents"][3]["args"]["Out msg nelems"] = 1024;
    d.put(2, doc);
    EXPECT_NE(message(d).find(
                  "worker2.pt.trace.json: NCCL kernel 'ncclDevKernel_AllReduce_Sum_f32_RING_LL' at ts 100"),
              std::string::npos)
        << message(d);
    EXPECT_NE(message(d).find("differs in kind or size from rank 0's"), std::string::npos);
  }
  {
    const RankDir d("missing");
    json doc = rank_trace(3);
    doc["traceEvents"][3]["args"]["Collective name"] = "broadcast";
    d.put(3, doc);
    EXPECT_NE(message(d).find("has 3 of its 4 ranks in the traces"), std::string::npos) << message(d);
  }
  {
    const RankDir d("dtype");
    json doc = rank_trace(0);
    doc["traceEvents"][3]["args"]["dtype"] = "Quux";
    d.put(0, doc);
    EXPECT_NE(message(d).find("dtype 'Quux' is not a known tensor type"), std::string::npos) << message(d);
  }
  {
    const RankDir d("truncated");
    json doc = rank_trace(0);
    doc["traceEvents"][11]["args"]["Process Group Ranks"] = "[0, ..., 1]";
    d.put(0, doc);
    EXPECT_NE(message(d).find("\"Process Group Ranks\" is truncated ('[0, ..., 1]') and \"Group size\" is "
                              "not the world size 4"),
              std::string::npos)
        << message(d);
  }
  {
    const RankDir d("outside");
    json doc = rank_trace(0);
    doc["traceEvents"][3]["args"]["Process Group Ranks"] = "[0, 1, 2, 7]";
    d.put(0, doc);
    EXPECT_NE(message(d).find("names rank 7, outside 0..3"), std::string::npos) << message(d);
  }
  {
    const RankDir d("cluster");
    const replay::StepProgram p = import_kineto_ranks(d.dir.string());
    network::ClusterSpec two = small_cluster(1);
    two.node.gpus_per_node = 2;
    two.node.nics_per_node = 2;
    EXPECT_NE(error_of([&] {
                run_trace_program(p, two, "analytical");
              }).find("the trace has 4 ranks but the cluster has 2 GPUs"),
              std::string::npos);
  }
  const fs::path empty = temp_dir("ct_kineto_ranks", "empty");
  EXPECT_NE(error_of([&] { import_kineto_ranks(empty.string()); }).find("no .json or .json.gz Kineto traces"),
            std::string::npos);
  fs::remove_all(empty);
}

}  // namespace
}  // namespace ct::trace

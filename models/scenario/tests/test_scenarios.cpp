// Every scenario file shipped in scenarios/ loads, passes the cross-field checks, and the
// default one is the 10,240-GPU cluster the project exists for.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "models/scenario/layouts.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/rollout.h"
#include "models/scenario/runner.h"

using namespace ct::scenario;

TEST(Scenarios, EveryShippedScenarioLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("scenarios")) {
    const auto ext = entry.path().extension();
    if (ext != ".json" && ext != ".yaml" && ext != ".yml") continue;
    SCOPED_TRACE(entry.path().string());
    Config c = to_config(read_document(entry.path().string(), {}));
    EXPECT_NO_THROW(check_config(c));
    ++count;
  }
  EXPECT_GE(count, 2);
}

TEST(Scenarios, DefaultIsTheTenThousandGpuCluster) {
  Config c = to_config(read_document("scenarios/default.json", {}));
  check_config(c);
  EXPECT_EQ(c.cluster_gpus(), 10240);
  EXPECT_EQ(c.cluster.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(c.cluster.nic.bps(), 400e9);
  EXPECT_EQ(c.cluster.fabric.tiers, 3);
  const auto& p = c.training_job.parallelism;
  EXPECT_EQ(p.tensor_parallel, 8);
  EXPECT_EQ(p.pipeline_parallel, 8);
  const int64_t used = int64_t{p.tensor_parallel} * p.pipeline_parallel * p.data_parallel;
  const double spare = 1.0 - static_cast<double>(used) / static_cast<double>(c.cluster_gpus());
  EXPECT_GE(spare, 0.01);
  EXPECT_LE(spare, 0.03);
}

TEST(Scenarios, SeedYamlCarriesTheTrainingConfigJobBlock) {
  Config c = to_config(read_document("scenarios/seed-10k.yaml", {}));
  check_config(c);
  const auto& j = c.training_job;
  EXPECT_EQ(j.global_batch_size, 4096);
  EXPECT_EQ(j.model.seq_length, 8192);
  EXPECT_EQ(j.parallelism.data_parallel, 128);
  EXPECT_EQ(j.runtime.collective_timeout, ct::sim::Duration::s(1800));
  EXPECT_EQ(j.runtime.recompute_granularity, "full");
  EXPECT_EQ(j.checkpoint.interval_steps, 200);
  EXPECT_TRUE(j.checkpoint.async_save);
  EXPECT_EQ(j.checkpoint.keep_last_n, 5);
  EXPECT_TRUE(j.scheduling.topology_aware);
}

// Incast: fan_in senders share the receiver's NIC, so the last byte lands after
// fan_in x size / (NIC rate x protocol efficiency), plus the path latency.
TEST(Scenarios, IncastTrafficMatchesTheClosedForm) {
  const auto doc = nlohmann::json::parse(R"({"cluster": {"nodes": 16, "fabric": {"tiers": 2}},
      "network": {"solve_quantum": "0s"},
      "traffic": {"pattern": "incast", "fan_in": 8, "size": "4MiB"}})");
  Config c = to_config(doc);
  check_config(c);
  const auto report = run(c);
  const double expected = 8 * 4194304.0 * 8 / (400e9 * 0.95);
  const double t = report["traffic"]["completion_time_s"];
  EXPECT_NEAR(t, expected, 0.01 * expected);
  EXPECT_EQ(report["traffic"]["flows"], 8);
  EXPECT_NEAR(report["traffic"]["fct_p50_s"].get<double>(), t, 1e-9);
}

TEST(Scenarios, PacketModeIsReportedAsNotComputedNotInvented) {
  Config c = to_config(read_document("scenarios/default.json", {"network.mode=packet"}));
  check_config(c);
  const auto report = run(c);
  EXPECT_FALSE(report.contains("step_time_s"));
  EXPECT_TRUE(report["not_computed"].contains("step_time_s"));
}

// A step graph that cannot fit in this machine's memory fails fast with the estimate.
TEST(Scenarios, OversizedStepGraphFailsFastWithEstimate) {
  Config c =
      to_config(read_document("scenarios/default.json", {"training_job.global_batch_size=31200000",
                                                         "training_job.parallelism.virtual_pipeline=1"}));
  check_config(c);
  try {
    run(c);
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("GiB"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("network.mode=analytical"), std::string::npos);
  }
}

// Packet mode: a lossless incast loses nothing, ECN marks, and a NIC's pause storm is
// caught by the switch watchdog after its threshold.
TEST(Scenarios, PacketTrafficReportsPfcEcnAndStorms) {
  const auto doc = nlohmann::json::parse(R"({"cluster": {"nodes": 16, "fabric": {"tiers": 2}},
      "network": {"mode": "packet", "pfc": {"watchdog": "50ms"}},
      "traffic": {"pattern": "incast", "fan_in": 8, "size": "4MiB"},
      "faults": [{"kind": "pause_storm", "node": 3, "nic": 0, "at": "1ms"}]})");
  Config c = to_config(doc);
  check_config(c);
  const auto report = run(c);
  EXPECT_EQ(report["traffic"]["flows"], 8);
  EXPECT_EQ(report["network"]["dropped_packets"], 0);
  EXPECT_GT(report["network"]["ecn_marked_fraction"].get<double>(), 0.0);
  ASSERT_EQ(report["network"]["pfc_storms"].size(), 1u);
  const auto& storm = report["network"]["pfc_storms"][0];
  EXPECT_NEAR(storm["detected_s"].get<double>() - storm["start_s"].get<double>(), 0.050, 1e-6);
  EXPECT_EQ(storm["port"], "leaf0->node3.nic0");
}

// Staged rollout: weak scaling from one replica to the whole job; the first stage is the
// reference (efficiency 1) and each stage reports the throughput added per doubling.
TEST(Scenarios, RolloutReportsScalingLinearity) {
  Config c = to_config(read_document("scenarios/default.json", {"network.mode=analytical"}));
  check_config(c);
  const auto r = rollout(c);
  const auto& stages = r["stages"];
  ASSERT_GE(stages.size(), 3u);
  EXPECT_EQ(stages[0]["data_parallel"], 1);
  EXPECT_DOUBLE_EQ(stages[0]["scaling_efficiency"].get<double>(), 1.0);
  EXPECT_EQ(stages.back()["gpus"], 9984);
  for (size_t i = 1; i < stages.size(); ++i) {
    EXPECT_LE(stages[i]["scaling_efficiency"].get<double>(), 1.0 + 1e-9);
    EXPECT_GT(stages[i]["doubling_gain"].get<double>(), 0.5);
  }
}

// cluster.gpu_spec.power_limit acts where it has a meaning: a training step at 500 W on 700 W
// parts is slower (compute-bound work at (500/700)^0.303), its busy GPUs draw less, the report
// says what was assumed; a limit above the rated power or at the idle power is refused by key.
TEST(Scenarios, PowerLimitSlowsTheStepAndLowersPower) {
  const std::vector<std::string> base{"cluster.nodes=8",
                                      "training_job.parallelism.data_parallel=1",
                                      "training_job.model.layers=16",
                                      "training_job.global_batch_size=16",
                                      "network.mode=analytical",
                                      "recovery.hot_spares=0"};
  auto report_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> o = base;
    o.insert(o.end(), extra.begin(), extra.end());
    Config c = to_config(read_document("scenarios/default.json", o));
    check_config(c);
    return run(c);
  };
  const auto full = report_with({});
  const auto capped = report_with({"cluster.gpu_spec.power_limit=500W"});
  const double ratio = capped["step_time_s"].get<double>() / full["step_time_s"].get<double>();
  EXPECT_GT(ratio, 1.03);
  EXPECT_LT(ratio, 1.0 / std::pow(500.0 / 700.0, 0.303) + 1e-9);
  EXPECT_LT(capped["power"]["cluster_peak_w"].get<double>(), full["power"]["cluster_peak_w"].get<double>());
  EXPECT_NE(capped["assumptions"].dump().find("power limit 500 W"), std::string::npos)
      << capped["assumptions"].dump();
  for (const char* bad : {"cluster.gpu_spec.power_limit=800W", "cluster.gpu_spec.power_limit=50W"}) {
    Config c = to_config(read_document("scenarios/default.json", {bad}));
    try {
      check_config(c);
      FAIL() << "expected a ScenarioError for " << bad;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("cluster.gpu_spec.power_limit: got"), std::string::npos)
          << e.what();
    }
  }
}

// training_job.runtime.compile_loss: a compiled cross entropy keeps 4 bytes per logit at the
// peak instead of eager torchtitan's 12 (memory.h, 4.); auto compiles it on torchtitan with
// torch_compile (its loss.py since April 2025); compiled without torch_compile is refused.
TEST(Scenarios, CompiledLossKeepsFourBytesPerLogit) {
  const std::vector<std::string> base{"cluster.nodes=1",
                                      "training_job.parallelism.tensor_parallel=1",
                                      "training_job.parallelism.pipeline_parallel=1",
                                      "training_job.parallelism.data_parallel=8",
                                      "training_job.parallelism.zero_stage=3",
                                      "training_job.parallelism.virtual_pipeline=1",
                                      "training_job.parallelism.sequence_parallel=false",
                                      "training_job.model.layers=4",
                                      "training_job.model.hidden=2048",
                                      "training_job.model.heads=16",
                                      "training_job.model.vocab=128256",
                                      "training_job.global_batch_size=8",
                                      "training_job.runtime.stack=torchtitan",
                                      "training_job.runtime.torch_compile=true",
                                      "network.mode=analytical",
                                      "recovery.hot_spares=0"};
  auto loss_bytes = [&](const std::string& mode) {
    std::vector<std::string> o = base;
    o.push_back("training_job.runtime.compile_loss=" + mode);
    Config c = to_config(read_document("scenarios/default.json", o));
    check_config(c);
    return run(c)["memory"]["logits_loss_bytes"].get<double>();
  };
  const double eager = loss_bytes("eager"), compiled = loss_bytes("compiled"), autod = loss_bytes("auto");
  EXPECT_DOUBLE_EQ(autod, compiled);
  const double logits = 2048.0 * 128256.0;  // one sequence of the default 2048 tokens per GPU
  EXPECT_NEAR(eager - compiled, 8.0 * logits, 0.01 * 8.0 * logits);
  std::vector<std::string> o = base;
  o.back() = "recovery.hot_spares=0";
  o.push_back("training_job.runtime.torch_compile=false");
  o.push_back("training_job.runtime.compile_loss=compiled");
  Config c = to_config(read_document("scenarios/default.json", o));
  try {
    check_config(c);
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("training_job.runtime.compile_loss: got \"compiled\""),
              std::string::npos)
        << e.what();
  }
}

// training_job.runtime.fp8_params: FP8 primary weights hold the linear weights in FP8 (1 byte
// + the cached 1-byte transpose) where the bf16 copy was, so the separate FP8 weight cache (2
// bytes per matmul parameter) goes, and the distributed optimizer's parameter all-gather
// moves the linear weights in FP8; auto = yes on the nemo stack; yes with bf16 is refused.
TEST(Scenarios, Fp8ParamsDropTheWeightCacheAndHalveTheGather) {
  const std::vector<std::string> base{"cluster.nodes=1",
                                      "training_job.parallelism.tensor_parallel=2",
                                      "training_job.parallelism.pipeline_parallel=1",
                                      "training_job.parallelism.data_parallel=4",
                                      "training_job.parallelism.zero_stage=1",
                                      "training_job.parallelism.virtual_pipeline=1",
                                      "training_job.model.layers=4",
                                      "training_job.model.hidden=2048",
                                      "training_job.model.heads=16",
                                      "training_job.global_batch_size=8",
                                      "training_job.runtime.precision=fp8",
                                      "network.mode=analytical",
                                      "recovery.hot_spares=0"};
  struct Figures {
    double weights = 0, gather_bytes = 0;
  };
  auto figures = [&](const std::string& stack, const std::string& fp8_params) {
    std::vector<std::string> o = base;
    o.push_back("training_job.runtime.stack=" + stack);
    o.push_back("training_job.runtime.fp8_params=" + fp8_params);
    Config c = to_config(read_document("scenarios/default.json", o));
    check_config(c);
    const auto r = run(c);
    Figures f;
    f.weights = r["memory"]["weights_bytes"].get<double>();
    for (const auto& col : r["collectives"]) {
      if (col["op"] == "all_gather") f.gather_bytes = std::max(f.gather_bytes, col["bytes"].get<double>());
    }
    return f;
  };
  const Figures no = figures("megatron-core", "no"), yes = figures("megatron-core", "yes");
  // GPT layer (gelu, biases): 12 h^2 matmul weights + 13 h biases... split over t = 2.
  const double h = 2048.0, matmul = 4.0 * (12.0 * h * h) / 2.0;
  EXPECT_NEAR(no.weights - yes.weights, 2.0 * matmul, 0.02 * 2.0 * matmul);
  ASSERT_GT(no.gather_bytes, 0.0);
  EXPECT_LT(yes.gather_bytes, 0.75 * no.gather_bytes);  // linear weights are most of the stage
  EXPECT_GT(yes.gather_bytes, 0.5 * no.gather_bytes);   // embeddings and norms stay bf16
  // auto: yes on nemo, no on megatron-core.
  EXPECT_DOUBLE_EQ(figures("nemo", "auto").weights, figures("nemo", "yes").weights);
  EXPECT_DOUBLE_EQ(figures("megatron-core", "auto").weights, no.weights);
  std::vector<std::string> o = base;
  o.push_back("training_job.runtime.precision=bf16");
  o.push_back("training_job.runtime.fp8_params=yes");
  Config c = to_config(read_document("scenarios/default.json", o));
  try {
    check_config(c);
    FAIL() << "expected a ScenarioError";
  } catch (const ScenarioError& e) {
    EXPECT_NE(
        std::string(e.what()).find("training_job.runtime.fp8_params: got \"yes\" with precision \"bf16\""),
        std::string::npos)
        << e.what();
  }
}

// training_job.runtime.offload_activation_layers: N offloaded layers leave GPU memory but for
// one in transit (N - 1 layers' activations fewer); their copies over the host link are
// exposed only where they outlast a layer's compute (a fast link costs nothing, a slow one
// slows the step); cluster.gpu_spec.host_link sets that link. Megatron's rules are errors.
TEST(Scenarios, OffloadedActivationsLeaveMemoryAndCostTheHostLink) {
  const std::vector<std::string> base{"cluster.nodes=1",
                                      "training_job.parallelism.tensor_parallel=1",
                                      "training_job.parallelism.pipeline_parallel=1",
                                      "training_job.parallelism.data_parallel=8",
                                      "training_job.parallelism.zero_stage=3",
                                      "training_job.parallelism.virtual_pipeline=1",
                                      "training_job.model.layers=8",
                                      "training_job.model.hidden=4096",
                                      "training_job.model.heads=32",
                                      "training_job.global_batch_size=16",
                                      "training_job.runtime.recompute_granularity=none",
                                      "network.mode=analytical",
                                      "recovery.hot_spares=0"};
  auto report = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> o = base;
    o.insert(o.end(), extra.begin(), extra.end());
    Config c = to_config(read_document("scenarios/default.json", o));
    check_config(c);
    return run(c);
  };
  const auto none = report({});
  const auto fast =
      report({"training_job.runtime.offload_activation_layers=5", "cluster.gpu_spec.host_link=10TB/s"});
  const auto slow =
      report({"training_job.runtime.offload_activation_layers=5", "cluster.gpu_spec.host_link=1GB/s"});
  const double act = none["memory"]["activations_bytes"].get<double>();
  EXPECT_NEAR(fast["memory"]["activations_bytes"].get<double>(), act * 4.0 / 8.0, 0.02 * act);
  EXPECT_DOUBLE_EQ(fast["step_time_s"].get<double>(), none["step_time_s"].get<double>());
  EXPECT_GT(slow["step_time_s"].get<double>(), 1.2 * none["step_time_s"].get<double>());
  for (const std::string& bad : {std::string("training_job.parallelism.pipeline_parallel=2"),
                                 std::string("training_job.runtime.recompute_granularity=selective"),
                                 std::string("training_job.runtime.offload_activation_layers=8")}) {
    std::vector<std::string> o = base;
    o.push_back("training_job.runtime.offload_activation_layers=5");
    o.push_back(bad);
    if (bad.find("pipeline") != std::string::npos) o.push_back("training_job.parallelism.data_parallel=4");
    Config c = to_config(read_document("scenarios/default.json", o));
    try {
      check_config(c);
      FAIL() << "expected a ScenarioError for " << bad;
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find("training_job.runtime.offload_activation_layers: got"),
                std::string::npos)
          << e.what();
    }
  }
}

// Layouts against one build of the cluster (layouts.h): every row is the step a run of that
// layout simulates, whatever the thread count, and a refused layout is a row error.
TEST(Scenarios, LayoutsAgainstOneClusterEqualOneRunEach) {
  const std::vector<std::vector<std::string>> layouts = {
      {"training_job.parallelism.pipeline_parallel=16", "training_job.parallelism.virtual_pipeline=1",
       "training_job.parallelism.data_parallel=78"},
      {"training_job.parallelism.tensor_parallel=4", "training_job.parallelism.pipeline_parallel=16",
       "training_job.parallelism.virtual_pipeline=1", "training_job.parallelism.data_parallel=156"},
      // The first layout's groups again (other micro-batches): its rings, plans and chains come
      // from the batch's shared caches (chain_cache.h, plan_cache.h), built by whichever thread
      // ran the first layout.
      {"training_job.parallelism.pipeline_parallel=16", "training_job.parallelism.virtual_pipeline=1",
       "training_job.parallelism.data_parallel=78", "training_job.micro_batch_size=2"},
      {"training_job.parallelism.tensor_parallel=5"}};
  const auto config = [&](size_t i) {
    std::vector<std::string> o = layouts[i];
    o.emplace_back("network.mode=analytical");
    Config c = to_config(read_document("scenarios/default.json", o));
    check_config(c);
    return c;
  };
  const Config base = to_config(read_document("scenarios/default.json", {"network.mode=analytical"}));
  for (const int threads : {1, 2}) {
    const std::vector<LayoutOutcome> rows = evaluate_layouts(base, layouts.size(), config, threads);
    ASSERT_EQ(rows.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
      ASSERT_EQ(rows[i].error, "") << i;
      const auto r = simulate_training_step(config(i));
      EXPECT_EQ(rows[i].step_time_s, r.step_time_s) << i;
      EXPECT_EQ(rows[i].mfu, r.mfu) << i;
      EXPECT_EQ(rows[i].events, r.events) << i;
    }
    EXPECT_NE(rows[3].error.find("tensor_parallel"), std::string::npos) << rows[3].error;
  }
}

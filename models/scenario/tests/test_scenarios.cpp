// Every scenario file shipped in scenarios/ loads, passes the cross-field checks, and the
// default one is the 10,240-GPU cluster the project exists for.
#include <gtest/gtest.h>

#include <filesystem>

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
  Config c = to_config(read_document("scenarios/default.json", {"training_job.global_batch_size=31200000",
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

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/reliability/campaign.h"
#include "models/reliability/checkpoint_interval.h"
#include "models/reliability/goodput.h"

namespace ct::reliability {
namespace {

CampaignSpec base() {
  CampaignSpec s;
  s.duration_s = 72 * 3600.0;
  s.repeats = 10;
  s.seed = 42;
  s.job = JobFootprint{1280, 8, 0};
  s.failures.node_failure_rate_per_day = 0.002;
  s.failures.gpu_failure_rate_per_day = 0.0005;
  s.recovery = RecoveryModel{60, 600, 120, 26, 86400};
  s.checkpoint = CheckpointPolicy{1800, 60, 0};
  return s;
}

double total(const TimeByCause& t) {
  return t.useful_s + t.lost_work_s + t.checkpoint_s + t.detection_s + t.repair_wait_s + t.restart_s;
}

TEST(Campaign, NoFailuresSynchronousGoodputIsExact) {
  CampaignSpec s = base();
  s.failures = FailureModel{};
  s.duration_s = 40 * (1800.0 + 60.0);
  const CampaignResult r = run_campaign(s);
  EXPECT_NEAR(r.goodput_mean, 1800.0 / 1860.0, 1e-12);
  EXPECT_NEAR(r.goodput_p10, 1800.0 / 1860.0, 1e-12);
  EXPECT_NEAR(r.goodput_p90, 1800.0 / 1860.0, 1e-12);
  EXPECT_EQ(r.interruptions_mean, 0.0);
  EXPECT_EQ(r.rto_mean_s, 0.0);
  EXPECT_NEAR(r.time_mean.checkpoint_s, 40 * 60.0, 1e-9);
}

TEST(Campaign, NoFailuresAsynchronousBlocksOnlyForTheSnapshot) {
  CampaignSpec s = base();
  s.failures = FailureModel{};
  s.checkpoint = CheckpointPolicy{1800, 5, 100};
  s.duration_s = 40 * 1805.0;
  const CampaignResult r = run_campaign(s);
  EXPECT_NEAR(r.goodput_mean, 1800.0 / 1805.0, 1e-12);
  EXPECT_EQ(r.replicas[0].checkpoints, 39);  // the 40th is still flushing at the end
  // A flush longer than the interval makes the next save wait for it.
  s.checkpoint = CheckpointPolicy{100, 5, 300};
  s.duration_s = 100000;
  const ReplicaResult slow = run_campaign(s).replicas[0];
  EXPECT_LT(slow.goodput, 100.0 / 105.0);
  EXPECT_NEAR(total(slow.time), s.duration_s, 1e-6);
}

// With unlimited spares and exponential failures the campaign is the renewal model of
// goodput.h. 1000 nodes at 0.01/day: M = 8640 s; 30-day replicas see ~300 failures each.
// The replica mean has standard error sigma / sqrt(n); we allow 4 standard errors plus
// 0.2% for the finite-horizon end effect (work in progress at the end counts as useful,
// ~ tau / duration = 0.05%) and the slightly lower failure rate while a slot is empty.
TEST(Campaign, MonteCarloGoodputMatchesTheRenewalModel) {
  CampaignSpec s;
  s.duration_s = 30 * 86400.0;
  s.repeats = 200;
  s.seed = 7;
  s.job = JobFootprint{1000, 8, 0};
  s.failures.node_failure_rate_per_day = 0.01;
  s.recovery = RecoveryModel{60, 240, 60, 1000000, 3600};
  const double m = 8640.0, d = 60.0, r = 360.0;
  const double tau = optimal_interval_s(d, m);
  s.checkpoint = CheckpointPolicy{tau, d, 0};
  const CampaignResult out = run_campaign(s);
  const double expected = expected_goodput(tau, d, r, m);
  const double tolerance = 4 * out.goodput_stddev / std::sqrt(200.0) + 0.002;
  EXPECT_NEAR(out.goodput_mean, expected, tolerance) << "stddev " << out.goodput_stddev;
  EXPECT_LT(tolerance, 0.01);
  EXPECT_EQ(out.repair_waits_mean, 0.0);
  EXPECT_NEAR(out.failures_mean, 30 * 86400.0 / m, 0.05 * 30 * 86400.0 / m);
  // RTO: a recovery of R restarted by failures within it, E = (e^{R/M} - 1) M.
  EXPECT_NEAR(out.rto_mean_s, std::expm1(r / m) * m, 0.02 * r);
  EXPECT_LE(out.goodput_p10, out.goodput_mean);
  EXPECT_GE(out.goodput_p90, out.goodput_mean);
}

TEST(Campaign, TimeByCauseAddsUpToTheDuration) {
  CampaignSpec s = base();
  s.failures.node_failure_rate_per_day = 0.05;
  s.failures.link_failure_rate_per_day = 0.001;
  s.job.links = 1280 * 8;
  s.checkpoint = CheckpointPolicy{1200, 10, 90};
  s.recovery.hot_spares = 5;
  for (auto dist : {FailureDistribution::exponential, FailureDistribution::weibull}) {
    s.failures.distribution = dist;
    s.failures.weibull_shape = 0.7;
    const CampaignResult r = run_campaign(s);
    for (const ReplicaResult& x : r.replicas) {
      EXPECT_NEAR(total(x.time), s.duration_s, 1e-6);
      EXPECT_NEAR(x.goodput, x.time.useful_s / s.duration_s, 1e-15);
      EXPECT_GT(x.time.lost_work_s, 0.0);
      EXPECT_GE(x.failures, x.interruptions);
    }
  }
}

TEST(Campaign, ExhaustedHotSparesMakeTheJobWaitForRepairs) {
  CampaignSpec s = base();
  s.job = JobFootprint{100, 8, 0};
  s.failures = FailureModel{};
  // 3 failures a day and 6 h repairs: 0.75 nodes in repair on average, so one spare is
  // usually enough but two failures within 6 h leave the job waiting. (With more nodes in
  // repair than spares on average the job would wait for ever.)
  s.repeats = 20;
  s.failures.node_failure_rate_per_day = 0.03;
  s.recovery.hot_spares = 1;
  s.recovery.repair_s = 6 * 3600.0;
  const CampaignResult starved = run_campaign(s);
  EXPECT_GT(starved.repair_waits_mean, 0.5);
  EXPECT_GT(starved.time_mean.repair_wait_s, 600.0);
  s.recovery.hot_spares = 1000;
  const CampaignResult plenty = run_campaign(s);
  EXPECT_EQ(plenty.repair_waits_mean, 0.0);
  EXPECT_EQ(plenty.time_mean.repair_wait_s, 0.0);
  EXPECT_GT(plenty.goodput_mean, starved.goodput_mean);
  // Waiting for repairs lengthens the recovery time.
  EXPECT_GT(starved.rto_mean_s, plenty.rto_mean_s);
}

TEST(Campaign, InfantMortalityWithWeibullShapeBelowOne) {
  CampaignSpec s = base();
  s.repeats = 50;
  s.failures.node_failure_rate_per_day = 0.01;
  s.failures.gpu_failure_rate_per_day = 0;
  const double exponential = run_campaign(s).failures_mean;
  s.failures.distribution = FailureDistribution::weibull;
  s.failures.weibull_shape = 0.5;
  const double weibull = run_campaign(s).failures_mean;
  // Fresh nodes with k = 0.5: P(fail within t) = 1 - exp(-sqrt(t / eta)), eta = mean / 2:
  // for 72 h of a 100-day mean, ~ 1 - exp(-sqrt(3/50)) = 22% vs 3% for exponential.
  EXPECT_GT(weibull, 3 * exponential);
}

TEST(Campaign, DeterministicPerSeed) {
  CampaignSpec s = base();
  s.failures.node_failure_rate_per_day = 0.02;
  const CampaignResult a = run_campaign(s);
  const CampaignResult b = run_campaign(s);
  ASSERT_EQ(a.replicas.size(), b.replicas.size());
  for (size_t i = 0; i < a.replicas.size(); ++i) {
    EXPECT_EQ(a.replicas[i].goodput, b.replicas[i].goodput);
    EXPECT_EQ(a.replicas[i].failures, b.replicas[i].failures);
    EXPECT_EQ(a.replicas[i].rto_sum_s, b.replicas[i].rto_sum_s);
  }
  EXPECT_EQ(run_replica(s, 3).goodput, a.replicas[3].goodput);
  EXPECT_NE(a.replicas[0].goodput, a.replicas[1].goodput);  // replicas use different streams
  s.seed = 43;
  EXPECT_NE(run_campaign(s).goodput_mean, a.goodput_mean);
}

TEST(Campaign, BadInputsNameTheScenarioKey) {
  auto expect_key = [](CampaignSpec s, const std::string& key) {
    try {
      run_campaign(s);
      ADD_FAILURE() << "no exception for " << key;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  CampaignSpec s = base();
  s.checkpoint.interval_s = 0;
  expect_key(s, "training_job.checkpoint.interval");
  s = base();
  s.failures.node_failure_rate_per_day = -1;
  expect_key(s, "failures.node_failure_rate_per_day");
  s = base();
  s.failures.link_failure_rate_per_day = -1;
  expect_key(s, "failures.link_failure_rate_per_day");
  s = base();
  s.repeats = 0;
  expect_key(s, "campaign.repeats");
  s = base();
  s.duration_s = 0;
  expect_key(s, "campaign.duration");
  s = base();
  s.recovery.detection_s = -1;
  expect_key(s, "recovery.detection");
  s = base();
  s.recovery.hot_spares = -1;
  expect_key(s, "recovery.hot_spares");
  s = base();
  s.recovery.repair_s = -1;
  expect_key(s, "recovery.repair");
}

// DESIGN target: 72 h x 10 replicas on 1,280 nodes in well under a second.
TEST(Campaign, SeventyTwoHoursTimesTenOnTwelveHundredEightyNodesIsFast) {
  CampaignSpec s = base();
  const auto start = std::chrono::steady_clock::now();
  const CampaignResult r = run_campaign(s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("wall_s", std::to_string(wall));
  std::printf("72 h x 10 x 1280 nodes: %.3f ms, goodput %.4f, interruptions %.1f\n", wall * 1e3,
              r.goodput_mean, r.interruptions_mean);
  EXPECT_LT(wall, 1.0);
  EXPECT_GT(r.interruptions_mean, 5.0);  // 1280 x 0.006 / day x 3 days = 23 expected
}

}  // namespace
}  // namespace ct::reliability

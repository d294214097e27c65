#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

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
  return t.useful_s + t.lost_work_s + t.checkpoint_s + t.detection_s + t.repair_wait_s + t.restart_s +
         t.health_check_s;
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
  s = base();
  s.checkpoint = CheckpointPolicy{30, 60, 0};  // synchronous save longer than the interval
  expect_key(s, "training_job.checkpoint.interval");
  s.checkpoint = CheckpointPolicy{30, 60, 100};  // asynchronous: the save only blocks
  EXPECT_NO_THROW(run_campaign(s));
  s = base();
  s.recovery.health_check_coverage = 1.5;
  expect_key(s, "recovery.health_check_coverage");
  s = base();
  s.recovery.health_check_s = -1;
  expect_key(s, "recovery.health_check");
  s = base();
  s.recovery.hang_detection_s = -1;
  expect_key(s, "training_job.runtime.collective_timeout");
  s = base();
  s.threads = -2;
  expect_key(s, "campaign.threads");
  s = base();
  s.failures.latent_defect_fraction = 1.5;
  expect_key(s, "failures.latent_defect_fraction");
  s = base();
  s.failures.hbm_failure_rate_per_day = -0.1;
  expect_key(s, "failures.hbm_failure_rate_per_day");
  s = base();
  s.duration_s = 200 * 365.25 * 86400.0;
  expect_key(s, "campaign.duration");
}

// The Llama 3 profile on the Llama 3 job (2,048 nodes x 8 GPUs x 8 NICs, 16,384 links) for
// 54 days reproduces the table it was derived from: 419 failures, split by class. Counts
// are Poisson; the mean over 200 replicas has standard error sqrt(count / 200), and each
// class must land within 4 of them.
TEST(Campaign, Llama3ProfileReproducesItsFiftyFourDayTable) {
  CampaignSpec s;
  s.duration_s = 54 * 86400.0;
  s.repeats = 200;
  s.seed = 3;
  s.job = JobFootprint{2048, 8, 16384, 8, 0};
  s.failures = llama3_profile();
  s.recovery = RecoveryModel{0, 0, 0, 100000, 86400, 0};
  s.checkpoint = CheckpointPolicy{3600, 0, 0};
  const CampaignResult r = run_campaign(s);
  auto near = [&](FailureClass c, double expected) {
    const double got = r.failures_by_class[static_cast<size_t>(c)];
    EXPECT_NEAR(got, expected, 4 * std::sqrt(expected / 200.0) + 1e-9) << failure_class_name(c);
  };
  near(FailureClass::gpu, 196);
  near(FailureClass::hbm, 72);
  near(FailureClass::nic, 7);
  near(FailureClass::host, 46);
  near(FailureClass::link, 35);
  near(FailureClass::software, 56);
  near(FailureClass::hang, 7);
  near(FailureClass::switch_fabric, 0);
  EXPECT_NEAR(r.failures_mean, 419, 4 * std::sqrt(419 / 200.0));
  EXPECT_NEAR(job_mtbf_s(s.failures, s.job) / 3600.0, 54 * 24 / 419.0, 1e-9);  // 3.09 h
}

// A hang is found by the collective timeout, a crash by the heartbeat (recovery.detection).
// Rare failures (one a day against a 30-minute timeout) so that detections seldom overlap.
TEST(Campaign, HangsWaitForTheCollectiveTimeoutCrashesForTheHeartbeat) {
  CampaignSpec s;
  s.duration_s = 30 * 86400.0;
  s.repeats = 20;
  s.job = JobFootprint{100, 8, 0, 8, 0};
  s.recovery = RecoveryModel{30, 0, 0, 0, 86400, 1800};
  s.checkpoint = CheckpointPolicy{3600, 0, 0};
  s.failures.hang_failure_rate_per_day = 0.01;
  const CampaignResult hang = run_campaign(s);
  ASSERT_GT(hang.failures_mean, 10);
  EXPECT_EQ(hang.failures_by_class[static_cast<size_t>(FailureClass::hang)], hang.failures_mean);
  EXPECT_NEAR(hang.time_mean.detection_s / hang.failures_mean, 1800, 60);
  s.failures = FailureModel{};
  s.failures.software_failure_rate_per_day = 0.01;
  const CampaignResult crash = run_campaign(s);
  EXPECT_NEAR(crash.time_mean.detection_s / crash.failures_mean, 30, 1);
  EXPECT_GT(crash.goodput_mean, hang.goodput_mean);
}

// 20% of the nodes that join are defective and fail within an hour on average. A health
// check of 5 minutes that catches every defect removes those failures at the cost of the
// check (once at the start and after each recovery). (With 5% defects and a 10-minute check
// the checks cost more than they save: the trade-off is real, not built in.)
TEST(Campaign, HealthChecksCatchLatentDefectsBeforeTheyInterruptTheJob) {
  CampaignSpec s;
  s.duration_s = 14 * 86400.0;
  s.repeats = 20;
  s.job = JobFootprint{256, 8, 0, 8, 0};
  s.failures.node_failure_rate_per_day = 0.01;
  s.failures.latent_defect_fraction = 0.2;
  s.failures.latent_defect_mean_s = 3600;
  s.recovery = RecoveryModel{60, 600, 0, 128, 86400, 1800};
  s.checkpoint = CheckpointPolicy{1800, 30, 0};
  const CampaignResult unchecked = run_campaign(s);
  const auto latent = static_cast<size_t>(FailureClass::latent);
  // Each of the 256 + replacement joins is defective with p = 0.2; nearly all fail within
  // 14 days (mean 1 h).
  EXPECT_GT(unchecked.failures_by_class[latent], 0.2 * 256 * 0.8);
  EXPECT_EQ(unchecked.defects_caught_mean, 0.0);
  s.recovery.health_check_s = 300;
  s.recovery.health_check_coverage = 1.0;
  const CampaignResult checked = run_campaign(s);
  EXPECT_EQ(checked.failures_by_class[latent], 0.0);
  EXPECT_GT(checked.defects_caught_mean, 0.2 * 256 * 0.8);
  EXPECT_GT(checked.time_mean.health_check_s, 300 * (1 + checked.interruptions_mean) - 1e-6);
  EXPECT_GT(checked.goodput_mean, unchecked.goodput_mean);
  for (const ReplicaResult& x : checked.replicas) EXPECT_NEAR(total(x.time), s.duration_s, 1e-6);
}

// Replicas run in parallel; the result must not depend on how many threads ran them.
TEST(Campaign, IdenticalResultsWhateverTheThreadCount) {
  CampaignSpec s = base();
  s.repeats = 37;
  s.failures = llama3_profile();
  s.job = JobFootprint{1280, 8, 10240, 8, 192};
  s.failures.latent_defect_fraction = 0.02;
  s.recovery.health_check_s = 300;
  s.recovery.health_check_coverage = 0.7;
  std::vector<CampaignResult> runs;
  for (int threads : {1, 2, 3, 0}) {
    s.threads = threads;
    runs.push_back(run_campaign(s));
  }
  for (const CampaignResult& r : runs) {
    EXPECT_EQ(r.goodput_mean, runs[0].goodput_mean);
    EXPECT_EQ(r.goodput_p10, runs[0].goodput_p10);
    EXPECT_EQ(r.failures_by_class, runs[0].failures_by_class);
    EXPECT_EQ(r.rto_mean_s, runs[0].rto_mean_s);
    for (size_t i = 0; i < r.replicas.size(); ++i) {
      EXPECT_EQ(r.replicas[i].goodput, runs[0].replicas[i].goodput);
      EXPECT_EQ(r.replicas[i].interruptions_by_class, runs[0].replicas[i].interruptions_by_class);
    }
  }
}

// Validation: exponential failures with zero restart cost, where Daly's higher-order
// formula approximates the true optimum. The simulated curve (common random numbers) has
// its vertex within 5% of Daly's interval, and each point agrees with the renewal-reward
// goodput of goodput.h within 4 standard errors plus 0.1% (the horizon's end effect).
TEST(Campaign, SimulatedOptimumIntervalIsWithinFivePercentOfDaly) {
  CampaignSpec s;
  s.duration_s = 60 * 86400.0;
  s.repeats = 400;
  s.seed = 11;
  s.job = JobFootprint{1, 8, 0, 8, 0};
  const double m = 4 * 3600.0, d = 120.0;
  s.failures.software_failure_rate_per_day = 86400.0 / m;  // one job-wide process, M = 4 h
  s.recovery = RecoveryModel{0, 0, 0, 0, 86400, 0};
  s.checkpoint = CheckpointPolicy{1, d, 0};
  const double daly = daly_interval_s(d, m);
  std::vector<double> grid;
  for (int k = -6; k <= 6; ++k) grid.push_back(daly * std::pow(2.0, k / 6.0));
  const IntervalCurve curve = simulate_interval_curve(s, grid);
  ASSERT_TRUE(curve.best_inside);
  std::printf("Daly %.1f s, simulated optimum %.1f s (%+.2f%%), closed-form optimum %.1f s\n", daly,
              curve.best_interval_s, 100 * (curve.best_interval_s / daly - 1), optimal_interval_s(d, m));
  EXPECT_NEAR(curve.best_interval_s / daly, 1.0, 0.05);
  for (const IntervalPoint& p : curve.points) {
    EXPECT_NEAR(p.goodput_mean, expected_goodput(p.interval_s, d, 0, m), 4 * p.goodput_stderr + 0.001)
        << p.interval_s;
  }
}

// Prints the wall time of 72 h x 10 replicas on 1,280 nodes (no assertion on time).
TEST(Campaign, SeventyTwoHoursTimesTenOnTwelveHundredEightyNodesIsFast) {
  CampaignSpec s = base();
  const auto start = std::chrono::steady_clock::now();
  const CampaignResult r = run_campaign(s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("wall_s", std::to_string(wall));
  std::printf("72 h x 10 x 1280 nodes: %.3f ms, goodput %.4f, interruptions %.1f\n", wall * 1e3,
              r.goodput_mean, r.interruptions_mean);
  EXPECT_GT(r.interruptions_mean, 5.0);  // 1280 x 0.006 / day x 3 days = 23 expected
}

}  // namespace
}  // namespace ct::reliability

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/reliability/checkpoint_interval.h"
#include "models/reliability/failure_model.h"

namespace ct::reliability {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(CheckpointInterval, YoungClosedForm) {
  // d = 60 s, M = 6 h = 21600 s: sqrt(2 x 60 x 21600) = sqrt(2,592,000) = 1609.97 s.
  EXPECT_NEAR(young_interval_s(60, 21600), 1609.968944, 1e-6);
  EXPECT_DOUBLE_EQ(young_interval_s(50, 100), 100.0);
  EXPECT_EQ(young_interval_s(60, kInf), kInf);
}

TEST(CheckpointInterval, DalyClosedForm) {
  // d = 60, M = 21600: d/(2M) = 1/720, sqrt = 0.0372678; d/(18M) = 1/6480.
  const double expected = 1609.968944 * (1 + 0.0372678 / 3 + 1.0 / 6480) - 60;
  EXPECT_NEAR(daly_interval_s(60, 21600), expected, 1e-3);
  EXPECT_NEAR(daly_interval_s(60, 21600), 1570.217, 1e-3);
  // d = M / 2: sqrt(M^2) (1 + 1/6 + 1/36) - M/2 = M (1 + 6/36 + 1/36 - 1/2) = 25M/36.
  EXPECT_NEAR(daly_interval_s(50, 100), 100.0 * 25.0 / 36.0, 1e-12);
  // d >= 2M: tau = M.
  EXPECT_DOUBLE_EQ(daly_interval_s(200, 100), 100.0);
  EXPECT_DOUBLE_EQ(daly_interval_s(500, 100), 100.0);
  EXPECT_EQ(daly_interval_s(60, kInf), kInf);
  // Daly tends to Young as d / M -> 0.
  EXPECT_NEAR(daly_interval_s(1, 1e9) / young_interval_s(1, 1e9), 1.0, 1e-4);
}

TEST(CheckpointInterval, RejectsBadInputs) {
  EXPECT_THROW(young_interval_s(0, 100), std::invalid_argument);
  EXPECT_THROW(daly_interval_s(-1, 100), std::invalid_argument);
  EXPECT_THROW(daly_interval_s(1, 0), std::invalid_argument);
}

TEST(FailureModel, JobMtbfSumsNodeGpuAndLinkRates) {
  FailureModel f;
  f.node_failure_rate_per_day = 0.001;
  f.gpu_failure_rate_per_day = 0.0005;
  f.link_failure_rate_per_day = 0.0001;
  const JobFootprint job{1280, 8, 1280 * 8};
  // per day: 1280 x (0.001 + 8 x 0.0005) + 10240 x 0.0001 = 6.4 + 1.024 = 7.424
  EXPECT_NEAR(job_failure_rate_per_s(f, job), 7.424 / 86400.0, 1e-15);
  EXPECT_NEAR(job_mtbf_s(f, job), 86400.0 / 7.424, 1e-9);
  EXPECT_EQ(job_mtbf_s(FailureModel{}, job), kInf);
}

TEST(FailureModel, NegativeRateNamesTheKey) {
  FailureModel f;
  f.node_failure_rate_per_day = -0.1;
  try {
    job_mtbf_s(f, JobFootprint{10, 8, 0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("failures.node_failure_rate_per_day"), std::string::npos);
  }
  f = FailureModel{};
  f.gpu_failure_rate_per_day = std::nan("");
  EXPECT_THROW(job_mtbf_s(f, JobFootprint{10, 8, 0}), std::invalid_argument);
  f = FailureModel{};
  f.weibull_shape = 0;
  EXPECT_THROW(job_mtbf_s(f, JobFootprint{10, 8, 0}), std::invalid_argument);
  EXPECT_THROW(parse_failure_distribution("lognormal"), std::invalid_argument);
  EXPECT_EQ(parse_failure_distribution("weibull"), FailureDistribution::weibull);
}

}  // namespace
}  // namespace ct::reliability

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/reliability/checkpoint_interval.h"
#include "models/reliability/goodput.h"

namespace ct::reliability {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Goodput, NoFailuresIsWorkOverWorkPlusSave) {
  EXPECT_DOUBLE_EQ(expected_goodput(1800, 60, 600, kInf), 1800.0 / 1860.0);
  // A huge MTBF tends to the same value.
  EXPECT_NEAR(expected_goodput(1800, 60, 600, 1e15), 1800.0 / 1860.0, 1e-9);
}

TEST(Goodput, MatchesTheRenewalRewardExpression) {
  const double tau = 1800, d = 60, r = 660, m = 21600;
  const double expected = tau / (std::exp(r / m) * m * (std::exp((tau + d) / m) - 1.0));
  EXPECT_NEAR(expected_goodput(tau, d, r, m), expected, 1e-14);
  // First order: tau/(tau+d) x (1 - (tau/2 + d/2 + R)/M) roughly.
  EXPECT_NEAR(expected_goodput(tau, d, r, m), tau / (tau + d) * (1 - (tau / 2 + d / 2 + r) / m), 5e-3);
}

TEST(Goodput, OptimumSatisfiesTheStationarityCondition) {
  for (double m : {3600.0, 21600.0, 864000.0}) {
    for (double d : {10.0, 60.0, 600.0}) {
      const double tau = optimal_interval_s(d, m);
      const double x = tau / m;
      // G is flat at its maximum, so comparisons of G locate tau only to ~sqrt(machine
      // epsilon) relatively; the residual of the condition is of that order.
      EXPECT_NEAR((1 - x) * std::exp(x + d / m), 1.0, 1e-7) << "d " << d << " M " << m;
      EXPECT_GT(tau, 0.0);
      EXPECT_LT(tau, m);
      // Neighbours do no better.
      EXPECT_GE(expected_goodput(tau, d, 0, m), expected_goodput(tau * 1.01, d, 0, m));
      EXPECT_GE(expected_goodput(tau, d, 0, m), expected_goodput(tau * 0.99, d, 0, m));
    }
  }
}

TEST(Goodput, NumericalOptimumIsCloseToDalyForSmallSaveCost) {
  // d / M from 1/8640 to 1/36: Daly's higher-order estimate is within 5% (in practice < 1%).
  for (double m : {2160.0, 21600.0, 86400.0, 518400.0}) {
    const double d = 60;
    const double opt = optimal_interval_s(d, m);
    EXPECT_NEAR(daly_interval_s(d, m) / opt, 1.0, 0.05) << "M " << m;
    // The goodput lost by using Daly instead of the optimum is negligible.
    EXPECT_NEAR(expected_goodput(daly_interval_s(d, m), d, 0, m), expected_goodput(opt, d, 0, m), 1e-3);
  }
  // Daly is better than Young at moderate d / M.
  const double opt = optimal_interval_s(600, 21600);
  EXPECT_LT(std::abs(daly_interval_s(600, 21600) - opt), std::abs(young_interval_s(600, 21600) - opt));
}

TEST(Goodput, RecoveryScalesGoodputButNotTheOptimum) {
  const double m = 21600, d = 60, tau = 1500;
  EXPECT_NEAR(expected_goodput(tau, d, 600, m) / expected_goodput(tau, d, 0, m), std::exp(-600 / m), 1e-12);
  EXPECT_EQ(optimal_interval_s(d, kInf), kInf);
}

TEST(Goodput, BadInputsNameTheKey) {
  try {
    expected_goodput(0, 60, 600, 21600);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("training_job.checkpoint.interval"), std::string::npos);
  }
  try {
    expected_goodput(100, 60, -1, 21600);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("recovery.restart"), std::string::npos);
  }
  EXPECT_THROW(expected_goodput(100, -60, 0, 21600), std::invalid_argument);
  EXPECT_THROW(optimal_interval_s(60, -5), std::invalid_argument);
}

}  // namespace
}  // namespace ct::reliability

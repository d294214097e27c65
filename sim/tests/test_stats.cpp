#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/stats.h"
#include "sim/trace_writer.h"

using namespace ct::sim;
using namespace ct::sim::literals;

TEST(Stats, TimeWeightedMeanIsTheIntegralOverTime) {
  TimeWeighted q;
  q.set(Time::zero(), 2.0);
  q.set(Time::zero() + 1_s, 4.0);
  EXPECT_DOUBLE_EQ(q.mean(Time::zero() + 3_s), (2.0 * 1 + 4.0 * 2) / 3);
  EXPECT_DOUBLE_EQ(q.max(), 4.0);
}

TEST(Stats, DisabledProbesRecordNothing) {
  Counter c;
  c.enabled = false;
  c.add(5);
  EXPECT_EQ(c.value(), 0.0);
  Histogram h;
  h.enabled = false;
  h.record(1.0);
  EXPECT_EQ(h.count(), 0u);
}

TEST(Stats, HistogramQuantilesWithinBucketResolution) {
  Histogram h(1e-6, 16);
  for (int i = 1; i <= 1000; ++i) h.record(i * 1e-3);
  EXPECT_NEAR(h.quantile(0.5), 0.5, 0.5 * 0.05);
  EXPECT_NEAR(h.quantile(0.99), 0.99, 0.99 * 0.05);
  EXPECT_NEAR(h.mean(), 0.5005, 1e-9);
}

TEST(Stats, TimeSeriesMemoryIsBounded) {
  TimeSeries ts(64);
  for (int i = 0; i < 100000; ++i) ts.record(Time::zero() + Duration::us(i), 1.0);
  EXPECT_LE(ts.times_s().size(), 64u);
  EXPECT_GE(ts.times_s().size(), 16u);
  for (double v : ts.values()) EXPECT_DOUBLE_EQ(v, 1.0);
  EXPECT_LT(ts.times_s().front(), 1e-3);  // still covers the start
}

TEST(TraceWriter, WritesValidChromeTraceJson) {
  std::ostringstream out;
  {
    TraceWriter w(out);
    w.process_name(0, "rank 0");
    w.thread_name(0, 1, "compute \"main\"");
    w.complete(0, 1, "gemm", "compute", Time::zero() + 1_us, 2_us);
    w.counter(0, "queue", Time::zero() + 3_us, 42);
  }
  const auto j = nlohmann::json::parse(out.str());
  ASSERT_EQ(j["traceEvents"].size(), 4u);
  EXPECT_DOUBLE_EQ(j["traceEvents"][2]["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["traceEvents"][2]["dur"].get<double>(), 2.0);
}

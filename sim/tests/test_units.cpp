#include <gtest/gtest.h>

#include "sim/units.h"

using namespace ct::sim;
using namespace ct::sim::literals;

TEST(Units, DurationLiteralsAndArithmetic) {
  EXPECT_EQ((1_us).count_ps(), 1000000);
  EXPECT_EQ((1_s - 1_ms).count_ps(), 999000000000);
  const Time t = Time::zero() + 5_ns;
  EXPECT_EQ((t - Time::zero()), 5_ns);
  EXPECT_DOUBLE_EQ((2_ms).seconds(), 2e-3);
}

TEST(Units, ParsesEveryScenarioQuantity) {
  EXPECT_EQ(parse_duration("1.5us"), Duration::ps(1500000));
  EXPECT_EQ(parse_duration("1800s"), 1800_s);
  EXPECT_EQ(parse_duration("500 ns"), 500_ns);
  EXPECT_EQ(parse_duration("2h"), 7200_s);
  // Long spans as double seconds: past the ~106 days of int64 picoseconds.
  EXPECT_DOUBLE_EQ(parse_duration_seconds("180d"), 180 * 86400.0);
  EXPECT_DOUBLE_EQ(parse_duration_seconds("90min"), 5400.0);
  EXPECT_THROW(parse_duration("180d"), UnitError);
  EXPECT_THROW(parse_duration_seconds("3 weeks"), UnitError);
  EXPECT_EQ(parse_bytes("64MiB").n, 64LL << 20);
  EXPECT_EQ(parse_bytes("100KB").n, 100000);
  EXPECT_EQ(parse_bytes("4KiB").n, 4096);
  EXPECT_EQ(parse_bytes("1GiB").n, 1LL << 30);
  EXPECT_DOUBLE_EQ(parse_rate("400Gbps").bps(), 400e9);
  EXPECT_DOUBLE_EQ(parse_rate("400Gb/s").bps(), 400e9);
  EXPECT_DOUBLE_EQ(parse_rate("450GB/s").bps(), 3600e9);
  EXPECT_DOUBLE_EQ(parse_rate("2TB/s").bytes_per_second(), 2e12);
  EXPECT_DOUBLE_EQ(parse_power("700W").watts, 700.0);
  EXPECT_DOUBLE_EQ(parse_power("1.2MW").watts, 1.2e6);
}

TEST(Units, RejectsMalformedValuesWithExplanation) {
  for (const char* bad : {"", "us", "12", "-3us", "1.5 parsecs", "1e400s", "nan s", "3 5us"}) {
    try {
      parse_duration(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UnitError& e) {
      EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_bytes("64"), UnitError);
  EXPECT_THROW(parse_bytes("64Mib"), UnitError);
  EXPECT_THROW(parse_rate("400"), UnitError);
  EXPECT_THROW(parse_rate("400W"), UnitError);
  EXPECT_THROW(parse_power("700"), UnitError);
  EXPECT_THROW(parse_duration("300d"), UnitError);  // beyond int64 picoseconds
}

TEST(Units, SerializationTimeRoundsUp) {
  // 1 byte at 400 Gb/s = 20 ps exactly; 1 byte at 3 bit/s is 2.67 s -> ceil in ps.
  EXPECT_EQ(Bandwidth::gbps(400).transfer_time(Bytes{1}), Duration::ps(20));
  EXPECT_EQ(Bandwidth::bits_per_s(3).transfer_time(Bytes{1}), Duration::ps(2666666666667));
  EXPECT_EQ(Bandwidth::gbps(400).transfer_time(Bytes{4096}), Duration::ps(81920));
  EXPECT_EQ(Bandwidth::gbps(400).transfer_time(Bytes{0}), Duration::zero());
}

// The input-limit table and the bounded reader: streams stop at the limit, files above it are
// refused before they are read, and every message names the input, the size, the limit and
// the flag that raises it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "sim/input_limits.h"

namespace ct::sim {
namespace {

struct Reset {
  ~Reset() { reset_input_limits(); }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(InputLimits, TableHasDefaultsAndCanBeRaised) {
  Reset reset;
  const auto table = input_limits();
  ASSERT_EQ(table.size(), 7U);
  EXPECT_EQ(table[0].name, "scenario_bytes");
  EXPECT_EQ(input_limit("scenario_bytes"), int64_t{16} << 20);
  EXPECT_EQ(input_limit("yaml_nodes"), 1'000'000);
  set_input_limit("trace_bytes", 123);
  EXPECT_EQ(input_limit("trace_bytes"), 123);
  for (const auto& l : input_limits()) {
    if (l.name == "trace_bytes") {
      EXPECT_EQ(l.default_value, int64_t{2} << 30);
    }
  }
  reset_input_limits();
  EXPECT_EQ(input_limit("trace_bytes"), int64_t{2} << 30);
  EXPECT_NE(message_of([] {
              set_input_limit("nope", 3);
            }).find("unknown input limit 'nope', expected one of scenario_bytes"),
            std::string::npos);
  EXPECT_NE(message_of([] { set_input_limit("trace_bytes", 0); }).find("got 0, expected a whole number >= 1"),
            std::string::npos);
}

TEST(InputLimits, EndlessStreamStopsAtTheLimit) {
  Reset reset;
  set_input_limit("input_file_bytes", 3 << 20);
  const std::string m =
      message_of([] { read_bounded("/dev/zero", "input_file_bytes", "gpu file '/dev/zero'"); });
  EXPECT_EQ(
      m,
      "gpu file '/dev/zero': 4194304 bytes or more, above the input_file_bytes limit of 3145728 (bytes of an "
      "input file a scenario names); raise it with --limit input_file_bytes=N");
}

TEST(InputLimits, FileAboveTheLimitIsRefusedBeforeReading) {
  Reset reset;
  const auto path = std::filesystem::temp_directory_path() / "ct_input_limits_test.txt";
  {
    std::ofstream out(path);
    out << std::string(1000, 'x');
  }
  EXPECT_EQ(read_bounded(path.string(), "trace_bytes", "t").size(), 1000U);
  set_input_limit("trace_bytes", 999);
  EXPECT_EQ(message_of([&] { read_bounded(path.string(), "trace_bytes", "t"); }),
            "t: 1000 bytes, above the trace_bytes limit of 999 (bytes of one trace file after "
            "decompression); raise it "
            "with --limit trace_bytes=N");
  std::filesystem::remove(path);
  EXPECT_NE(message_of([&] { read_bounded(path.string(), "trace_bytes", "t"); }).find("t: cannot be opened"),
            std::string::npos);
  EXPECT_EQ(message_of([] { read_bounded("/tmp", "trace_bytes", "d"); }),
            "d: is a directory, expected a file");
}

}  // namespace
}  // namespace ct::sim

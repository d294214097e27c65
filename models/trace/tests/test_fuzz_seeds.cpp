// Every input under tests/fuzz/trace-seeds -- the fuzzers' seeds and the inputs that once
// crashed them -- through the importers as the fuzz targets run them: an imported program (which
// then replays, or stalls with the executor's "replay stalled" error) or a TraceError, nothing
// else. Plus the regressions by name, with the error they must give.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include "models/replay/tests/fixtures.h"
#include "models/trace/tests/trace_test_util.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using testing::error_of;

namespace fs = std::filesystem;

const fs::path kSeeds = "tests/fuzz/trace-seeds";

TEST(TraceFuzzSeeds, EveryInputImportsOrFailsCleanly) {
  int chakra = 0, kineto = 0, ranks_imported = 0;
  const network::ClusterSpec cluster = replay::testing::small_cluster(1);
  for (const auto& entry : fs::directory_iterator(kSeeds)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    if (entry.path().extension() == ".et") {
      ++chakra;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        const replay::StepProgram p = import_chakra_bytes("seeds", {{name, bytes}});
        try {
          EXPECT_GE(run_trace_program(p, cluster, "analytical").step_time_s, 0.0);
        } catch (const std::runtime_error& e) {
          EXPECT_EQ(std::string(e.what()).rfind("replay stalled", 0), 0U) << e.what();
        }
      } catch (const TraceError& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    } else if (entry.path().extension() == ".json" || entry.path().extension() == ".gz") {
      ++kineto;
      for (const bool gaps : {true, false}) {
        KinetoOptions o;
        o.keep_idle_gaps = gaps;
        try {
          import_kineto(entry.path().string(), o);
        } catch (const TraceError& e) {
          EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
      }
      // As the only rank of a job (fuzz_kineto does the same).
      const fs::path dir = fs::temp_directory_path() / ("ct_seed_ranks_" + std::to_string(::getpid()));
      fs::remove_all(dir);
      fs::create_directories(dir);
      fs::copy_file(entry.path(), dir / name);
      try {
        const replay::StepProgram p = import_kineto_ranks(dir.string());
        ++ranks_imported;
        EXPECT_GE(run_trace_program(p, cluster, "analytical").step_time_s, 0.0);
      } catch (const TraceError& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
      fs::remove_all(dir);
    }
  }
  EXPECT_GE(ranks_imported, 1);  // kineto-rank0-allreduce.json
  EXPECT_GE(chakra, 3);
  EXPECT_GE(kineto, 2);
}

// fuzz_kineto: a number beyond double's range (nlohmann's out_of_range 406) escaped the
// importer as a non-TraceError exception.
TEST(TraceFuzzSeeds, KinetoNumberOverflowIsAnError) {
  const std::string e =
      error_of([] { import_kineto((kSeeds / "regression-kineto-number-overflow.json").string()); });
  EXPECT_NE(e.find("trace.path: tests/fuzz/trace-seeds/regression-kineto-number-overflow.json: not JSON: "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("number overflow"), std::string::npos) << e;
  const fs::path small = fs::temp_directory_path() / ("ct_fuzz_seed_" + std::to_string(::getpid()) + ".json");
  std::ofstream(small) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1e999, "dur": 1}]})";
  EXPECT_NE(error_of([&] { import_kineto(small.string()); }).find(": not JSON: "), std::string::npos);
  fs::remove(small);
}

// fuzz_chakra: one compute node of about 3.4e5 s (then accepted up to 1e6 s per rank) made the
// replay fill the executor's 100 us activity buckets for minutes; a rank's step is now capped
// at an hour of compute.
TEST(TraceFuzzSeeds, ChakraComputeBeyondAnHourIsAnError) {
  std::ifstream in(kSeeds / "regression-chakra-long-compute.et", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string e = error_of([&] { import_chakra_bytes("seeds", {{"long.0.et", bytes}}); });
  EXPECT_EQ(e.rfind("trace.path: long.0.et: node 0 (", 0), 0U) << e;
  EXPECT_NE(e.find("3600 s"), std::string::npos) << e;
}

}  // namespace
}  // namespace ct::trace

// libFuzzer target: arbitrary bytes as one rank's Chakra ET file (rank 0 of a one-rank trace)
// through the whole importer (wire decoding, dependency order, collective grouping, send /
// receive matching, ClusterTwin attributes), and an imported program through the executor on
// one 8-GPU node with the analytical network. A TraceError is the expected answer to a bad
// file, as is a replay that stalls (a trace can deadlock: a receive waiting for a send that
// waits for it); any other exception, a crash, undefined behaviour, a leak or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/replay/tests/fixtures.h"
#include "models/trace/trace_import.h"

// Undefined behaviour stops the run like a crash (UBSan would otherwise report and go on).
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ct::replay::StepProgram program;
  try {
    program = ct::trace::import_chakra_bytes("fuzz", {{"fuzz.0.et", bytes}});
  } catch (const ct::trace::TraceError&) {
    return 0;
  }
  static const ct::network::ClusterSpec cluster = ct::replay::testing::small_cluster(1);
  try {
    ct::trace::run_trace_program(program, cluster, "analytical");
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("replay stalled", 0) != 0) throw;
  }
  return 0;
}

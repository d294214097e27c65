// libFuzzer target: arbitrary bytes as a PyTorch profiler (Kineto) trace file through
// import_kineto, with and without the idle gaps, and as the only rank of a multi-rank job
// through import_kineto_ranks. The importers read files (gzip detected by its magic bytes), so
// each input is written to one file in its own folder in /dev/shm (a RAM disk; the system
// temporary directory when absent) first. A TraceError is the expected answer to a bad trace;
// any other exception, a crash, undefined behaviour, a leak or a hang is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/trace/trace_import.h"
#include "sim/input_limits.h"

namespace {

struct InputFile {
  std::filesystem::path dir;
  std::string path;
  InputFile() {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir = base / ("ct_fuzz_kineto_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = (dir / "rank.json").string();
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

// Undefined behaviour stops the run like a crash (UBSan would otherwise report and go on).
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const InputFile file;
  // A gzip input up to max_len can inflate about 1000x: bound it well below the fuzzer's RSS
  // cap, so inflation bombs exercise the limit instead of the allocator.
  static const bool limited = [] {
    ct::sim::set_input_limit("trace_bytes", int64_t{16} << 20);
    return true;
  }();
  (void)limited;
  const std::string& path = file.path;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  for (const bool gaps : {true, false}) {
    ct::trace::KinetoOptions options;
    options.keep_idle_gaps = gaps;
    try {
      ct::trace::import_kineto(path, options);
    } catch (const ct::trace::TraceError&) {
    }
  }
  try {
    ct::trace::import_kineto_ranks(file.dir.string());
  } catch (const ct::trace::TraceError&) {
  }
  return 0;
}

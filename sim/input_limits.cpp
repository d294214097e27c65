#include "sim/input_limits.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace ct::sim {
namespace {

struct Entry {
  const char* name;
  int64_t default_value;
  const char* unit;
  const char* what;
};

constexpr std::array<Entry, 7> kTable{{
    {"scenario_bytes", int64_t{16} << 20, "bytes", "bytes of one scenario document"},
    {"scenario_nesting", 64, "levels", "nesting depth of a scenario document"},
    {"yaml_nodes", 1'000'000, "nodes", "YAML nodes after alias expansion"},
    {"input_file_bytes", int64_t{256} << 20, "bytes", "bytes of an input file a scenario names"},
    {"trace_bytes", int64_t{2} << 30, "bytes", "bytes of one trace file after decompression"},
    {"trace_events", 10'000'000, "events", "events or nodes in one trace file"},
    {"trace_ranks", 16'384, "files", "rank files in one trace directory"},
}};

std::array<std::atomic<int64_t>, kTable.size()>& values() {
  static std::array<std::atomic<int64_t>, kTable.size()> v;
  static const bool initialised = [] {
    for (size_t i = 0; i < kTable.size(); ++i) v[i].store(kTable[i].default_value);
    return true;
  }();
  (void)initialised;
  return v;
}

size_t index_of(std::string_view name) {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (name == kTable[i].name) return i;
  }
  std::string known;
  for (const auto& e : kTable) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw std::invalid_argument("unknown input limit '" + std::string(name) + "', expected one of " + known);
}

}  // namespace

std::vector<InputLimitInfo> input_limits() {
  std::vector<InputLimitInfo> out;
  for (size_t i = 0; i < kTable.size(); ++i) {
    out.push_back(
        {kTable[i].name, kTable[i].default_value, values()[i].load(), kTable[i].unit, kTable[i].what});
  }
  return out;
}

int64_t input_limit(std::string_view name) { return values()[index_of(name)].load(); }

void set_input_limit(std::string_view name, int64_t value) {
  const size_t i = index_of(name);
  if (value < 1) {
    throw std::invalid_argument("input limit " + std::string(name) + ": got " + std::to_string(value) +
                                ", expected a whole number >= 1");
  }
  values()[i].store(value);
}

void reset_input_limits() {
  for (size_t i = 0; i < kTable.size(); ++i) values()[i].store(kTable[i].default_value);
}

void input_limit_exceeded(std::string_view name, std::string_view subject, int64_t seen, bool at_least) {
  const size_t i = index_of(name);
  throw InputLimitError(std::string(subject) + ": " + std::to_string(seen) + " " + kTable[i].unit +
                        (at_least ? " or more" : "") + ", above the " + kTable[i].name + " limit of " +
                        std::to_string(values()[i].load()) + " (" + kTable[i].what +
                        "); raise it with --limit " + kTable[i].name + "=N");
}

void check_input_limit(std::string_view name, std::string_view subject, int64_t seen) {
  if (seen > input_limit(name)) input_limit_exceeded(name, subject, seen);
}

std::string read_bounded(const std::string& path, std::string_view limit_name, std::string_view subject) {
  const int64_t limit = input_limit(limit_name);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(std::string(subject) + ": is a directory, expected a file");
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    throw std::runtime_error(std::string(subject) + ": cannot be opened (" + std::strerror(errno) + ")");
  }
  std::string out;
  // A regular file's size is known: refuse before reading, and read it in one allocation.
  if (std::filesystem::is_regular_file(path, ec)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && static_cast<int64_t>(size) > limit)
      input_limit_exceeded(limit_name, subject, static_cast<int64_t>(size));
    if (!ec) out.reserve(size);
  }
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<char> buf(kChunk);
  while (true) {
    const size_t n = std::fread(buf.data(), 1, kChunk, f.get());
    if (n > 0) {
      if (static_cast<int64_t>(out.size() + n) > limit) {
        input_limit_exceeded(limit_name, subject, static_cast<int64_t>(out.size() + n), true);
      }
      out.append(buf.data(), n);
    }
    if (n < kChunk) {
      if (std::ferror(f.get()) != 0) throw std::runtime_error(std::string(subject) + ": read error");
      break;
    }
  }
  return out;
}

}  // namespace ct::sim

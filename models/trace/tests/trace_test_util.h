// Helpers shared by the trace tests: the message of a TraceError, and a fresh temp folder.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "models/trace/trace_import.h"

namespace ct::trace::testing {

// The TraceError message `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// <tmp>/<prefix>_<name>_<pid>, emptied; created unless `create` is false.
inline std::filesystem::path temp_dir(const std::string& prefix, const std::string& name,
                                      bool create = true) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / (prefix + "_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  if (create) std::filesystem::create_directories(p);
  return p;
}

}  // namespace ct::trace::testing

// Streaming writer of Chrome / Perfetto trace-event JSON ("traceEvents" array).
//
// Events are written as they come (nothing is buffered beyond the stream), so a trace of
// a long run costs disk, not memory. Times are microseconds in the file, as the format
// requires; ranks map to pid, streams to tid, and names are declared once with metadata.
#pragma once

#include <ostream>
#include <string_view>

#include "sim/units.h"

namespace ct::sim {

class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;
  ~TraceWriter();

  void process_name(int pid, std::string_view name);
  void thread_name(int pid, int tid, std::string_view name);
  // A complete event ("X") from start for duration on (pid, tid).
  void complete(int pid, int tid, std::string_view name, std::string_view category, Time start,
                Duration duration);
  // A counter sample ("C").
  void counter(int pid, std::string_view name, Time at, double value);
  void finish();

 private:
  void begin_event();
  std::ostream& out_;
  bool first_ = true;
  bool finished_ = false;
};

}  // namespace ct::sim

// Streaming writer of Chrome / Perfetto trace-event JSON ("traceEvents" array).
//
// Events are written as they come (nothing is buffered beyond the stream), so a trace of
// a long run costs disk, not memory. Times are microseconds in the file, as the format
// requires; ranks map to pid, streams to tid, and names are declared once with metadata.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string_view>
#include <utility>

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
  // A complete event ("X") from start for duration on (pid, tid). args_json: "" or the text of
  // a JSON object (written as the event's "args" as it is).
  void complete(int pid, int tid, std::string_view name, std::string_view category, Time start,
                Duration duration, std::string_view args_json = {});
  // A counter sample ("C").
  void counter(int pid, std::string_view name, Time at, double value);
  // A counter sample with several named series (one track each in the viewer).
  void counter(int pid, std::string_view name, Time at,
               std::initializer_list<std::pair<std::string_view, double>> series);
  // A flow arrow (legacy flow events "s" / "f", matched by name, category and id): it starts
  // inside the slice enclosing `at` on (pid, tid) and ends at the next slice that begins at
  // or after `at` on the end's (pid, tid).
  void flow_start(int pid, int tid, std::string_view name, std::string_view category, uint64_t id, Time at);
  void flow_end(int pid, int tid, std::string_view name, std::string_view category, uint64_t id, Time at);
  void finish();

 private:
  void begin_event();
  void flow(char phase, int pid, int tid, std::string_view name, std::string_view category, uint64_t id,
            Time at);
  std::ostream& out_;
  bool first_ = true;
  bool finished_ = false;
};

}  // namespace ct::sim

// Input limits: one declared table of how much of anything an input may bring in, checked
// while it is read, so a hostile or huge input gets an error naming the file, the limit, the
// size seen and the flag that raises it, instead of exhausting memory or time.
//
//   name              default     what it bounds
//   scenario_bytes    16 MiB      bytes of one scenario document (file, stream or string)
//   scenario_nesting  64          depth of nested sections/lists in a scenario document
//   yaml_nodes        1,000,000   YAML nodes after alias expansion ("billion laughs")
//   input_file_bytes  256 MiB     bytes of any other input file a scenario names (GPU file,
//                                 flow list, kernel timings)
//   trace_bytes       2 GiB       bytes of one trace file after gzip inflation
//   trace_events      10,000,000  events (Kineto) or nodes (Chakra, execution trace) in one file
//   trace_ranks       16,384      rank files in one trace directory
//
// Every value can be raised (or lowered) per process: CLI `--limit NAME=VALUE` on every
// command, Python `clustertwin.set_limit(name, value)`. The defaults keep each input's
// worst-case import well inside this project's reference machine (24 GiB): trace import costs
// about 6-8 bytes of memory per byte of trace JSON (measured, README "Input limits").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ct::sim {

// A limit was exceeded; the message names what, the size seen, the limit and how to raise it.
class InputLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InputLimitInfo {
  std::string name;
  int64_t default_value;
  int64_t value;     // current
  std::string unit;  // "bytes", "nodes", "levels", "events", "files"
  std::string what;
};

// Every limit with its default and current value, in table order.
std::vector<InputLimitInfo> input_limits();
// Current value; throws std::invalid_argument for an unknown name (listing the known ones).
int64_t input_limit(std::string_view name);
// Sets a limit (>= 1); throws std::invalid_argument naming the limit and the value.
void set_input_limit(std::string_view name, int64_t value);
// Restores every default (tests).
void reset_input_limits();

// Throws InputLimitError: "<subject>: <seen> <unit> [or more], above the <name> limit of
// <limit> (<what>); raise it with --limit <name>=N".
[[noreturn]] void input_limit_exceeded(std::string_view name, std::string_view subject, int64_t seen,
                                       bool at_least = false);
// Checks `seen` against the limit (throws as above when above it).
void check_input_limit(std::string_view name, std::string_view subject, int64_t seen);

// Reads a file -- or a pipe, device or other stream -- in bounded chunks, stopping as soon as
// more than input_limit(limit_name) bytes have arrived (so /dev/zero ends at the limit, never
// at memory's end). `subject` names the input in messages, e.g. "trace.path: run.json".
// Throws std::runtime_error "<subject>: cannot be opened" / "is a directory" / "read error".
std::string read_bounded(const std::string& path, std::string_view limit_name, std::string_view subject);

}  // namespace ct::sim

// The one table of scenario parameters: path, kind (type and unit), default, one-line doc
// and constraints. The loader, the JSON Schema, the help text and the Python docstrings are
// all generated from it, so a parameter is declared exactly once.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "models/scenario/config.h"

namespace ct::scenario {

// long_duration: a duration held as double seconds (campaigns of months; `duration` is
// int64 picoseconds, about 106 days).
enum class Kind {
  count,
  integer,
  real,
  fraction,
  boolean,
  text,
  duration,
  long_duration,
  bytes,
  rate,
  power
};

std::string_view kind_name(Kind kind);

// A converted value; only the member matching the parameter's kind is meaningful.
struct Value {
  int64_t i = 0;
  double d = 0.0;
  bool b = false;
  std::string s;
  Duration duration;
  Bytes bytes{0};
  Bandwidth rate;
  Power power;
};

template <typename Target>
struct ParamSpec {
  std::string path;  // "cluster.fabric.switch_radix" (list items: "faults[].rank")
  Kind kind = Kind::text;
  std::string fallback;  // default as JSON text; empty = required when its section is present
  std::string doc;
  std::function<void(Target&, const Value&)> assign;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;

  ParamSpec&& at_least(double v) && {
    min = v;
    return std::move(*this);
  }
  ParamSpec&& at_most(double v) && {
    max = v;
    return std::move(*this);
  }
  ParamSpec&& one_of(std::vector<std::string> c) && {
    choices = std::move(c);
    return std::move(*this);
  }
};

using Param = ParamSpec<Config>;
using FaultParam = ParamSpec<FaultSpec>;

const std::vector<Param>& param_table();
const std::vector<FaultParam>& fault_param_table();  // fields of each item of `faults`

// Top-level keys that hold a section; exactly one of the workload sections is required.
const std::vector<std::string>& section_names();
const std::vector<std::string>& workload_sections();

}  // namespace ct::scenario

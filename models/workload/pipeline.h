// Pipeline bubble closed forms (Narayanan et al. SC'21, Sec. 2.2).
//
// With p stages, m micro-batches per iteration and v virtual stages (model chunks) per
// rank, the idle time relative to the ideal compute time is
//   1F1B (PipeDream-Flush):  (p - 1) / m
//   interleaved 1F1B:        (p - 1) / (v m)
// and the fraction of the step spent idle is bubble / (1 + bubble).
#pragma once

#include <cstdint>

namespace ct::workload {

// Bubble time over ideal compute time; v = 1 gives plain 1F1B.
constexpr double bubble_fraction(int64_t p, int64_t m, int64_t v = 1) {
  return static_cast<double>(p - 1) / (static_cast<double>(v) * static_cast<double>(m));
}

// Bubble time over the whole step (compute + bubble).
constexpr double bubble_share_of_step(int64_t p, int64_t m, int64_t v = 1) {
  const double b = bubble_fraction(p, m, v);
  return b / (1.0 + b);
}

}  // namespace ct::workload

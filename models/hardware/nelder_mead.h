// Nelder–Mead simplex minimisation of f: R^n -> R (no derivatives).
//
// Standard coefficients: reflection 1, expansion 2, contraction 1/2, shrink 1/2. The initial
// simplex is x0 plus `step` along each axis. Stops when the spread of f over the simplex is
// below f_tolerance or after max_evaluations. Deterministic.
#pragma once

#include <functional>
#include <vector>

namespace ct::hardware {

struct MinimizeResult {
  std::vector<double> x;
  double value = 0.0;
  int evaluations = 0;
};

MinimizeResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                           double step, int max_evaluations = 20000, double f_tolerance = 1e-12);

}  // namespace ct::hardware

// Maths: see nelder_mead.h.
#include "models/hardware/nelder_mead.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ct::hardware {

MinimizeResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                           double step, int max_evaluations, double f_tolerance) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> pts(n + 1, x0);
  for (size_t i = 0; i < n; ++i) pts[i + 1][i] += step;
  std::vector<double> val(n + 1);
  int evals = 0;
  auto eval = [&](const std::vector<double>& x) {
    ++evals;
    const double v = f(x);
    return std::isfinite(v) ? v : 1e300;
  };
  for (size_t i = 0; i <= n; ++i) val[i] = eval(pts[i]);
  std::vector<size_t> order(n + 1);
  auto along = [&](const std::vector<double>& c, const std::vector<double>& worst, double t) {
    std::vector<double> x(n);
    for (size_t j = 0; j < n; ++j) x[j] = c[j] + t * (worst[j] - c[j]);
    return x;
  };
  while (evals < max_evaluations) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return val[a] < val[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (val[worst] - val[best] <= f_tolerance * (1.0 + std::abs(val[best]))) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) centroid[j] += pts[order[i]][j] / static_cast<double>(n);
    }
    const std::vector<double> xr = along(centroid, pts[worst], -1.0);
    const double fr = eval(xr);
    if (fr < val[best]) {
      const std::vector<double> xe = along(centroid, pts[worst], -2.0);
      const double fe = eval(xe);
      if (fe < fr) {
        pts[worst] = xe, val[worst] = fe;
      } else {
        pts[worst] = xr, val[worst] = fr;
      }
      continue;
    }
    if (fr < val[second]) {
      pts[worst] = xr, val[worst] = fr;
      continue;
    }
    const bool outside = fr < val[worst];
    const std::vector<double> xc = along(centroid, pts[worst], outside ? -0.5 : 0.5);
    const double fc = eval(xc);
    if (fc < std::min(fr, val[worst])) {
      pts[worst] = xc, val[worst] = fc;
      continue;
    }
    for (size_t i = 0; i <= n; ++i) {
      if (i == best) continue;
      for (size_t j = 0; j < n; ++j) pts[i][j] = pts[best][j] + 0.5 * (pts[i][j] - pts[best][j]);
      val[i] = eval(pts[i]);
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(val.begin(), val.end()) - val.begin());
  return {pts[best], val[best], evals};
}

}  // namespace ct::hardware

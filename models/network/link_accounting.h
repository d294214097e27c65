// Internal: per-resource statistics, updated only when a load or capacity changes.
//
// Each resource r keeps a piecewise-constant load L_r(t) (bit/s) and capacity C_r(t). On a
// change at time t the interval since the last change is folded in:
//   bits_r += L_r dt,   busy_r += dt if L_r > 0,   util_r += L_r / C_r dt,
// and utilization(now) = util_r / now. A backend without rates (analytical) adds finished
// work instead: bits_r += b, busy_r += util_r += b / C_r.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/network/network.h"
#include "sim/units.h"

namespace ct::network {

class LinkAccounting {
 public:
  LinkAccounting(const Cluster& cluster, std::vector<double> capacity_bps);

  [[nodiscard]] double capacity_bps(int32_t r) const { return capacity_[static_cast<size_t>(r)]; }
  [[nodiscard]] const std::vector<double>& capacities() const { return capacity_; }
  void set_capacity(int32_t r, double bps, sim::Time now);
  void add_load(int32_t r, double delta_bps, sim::Time now);
  void add_work(int32_t r, double bits);

  [[nodiscard]] LinkStats stats(int32_t r, sim::Time now) const;
  [[nodiscard]] std::vector<LinkStats> top(size_t k, sim::Time now) const;
  [[nodiscard]] double max_utilization(sim::Time now) const;

 private:
  struct Acc {
    double load = 0.0;
    double bits = 0.0;
    double busy_s = 0.0;
    double util_s = 0.0;
    int64_t last_ps = 0;
  };
  void flush(size_t r, sim::Time now);
  [[nodiscard]] double utilization(size_t r, sim::Time now) const;

  const Cluster& cluster_;
  std::vector<double> capacity_;
  std::vector<Acc> acc_;
};

}  // namespace ct::network

// Internal: per-resource statistics.
//
// Each resource r keeps the bits that crossed it, the time it carried traffic (busy) and the
// integral of its utilization. The flow backend adds a transfer's bits to every link it uses
// when the transfer stops moving (delivered, cut, or stalled at rate 0) or before a link on its
// path changes capacity, so that util_r += bits / C_r is the integral of L_r / C_r dt exactly
// (C_r is constant between attributions); rate changes in between cost nothing here. busy_r is
// the time during which at least one transfer with a positive rate crosses r. Readings taken
// while transfers are in flight add their bits not yet attributed (`in_flight`). A backend
// without rates (analytical) adds finished work instead: bits_r += b, busy_r += util_r += b / C_r.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/network/network.h"
#include "sim/units.h"

namespace ct::network {

class LinkAccounting {
 public:
  // capacity_bps: one entry per resource, possibly shared with other runs (a layout sweep's):
  // the first set_capacity copies it.
  LinkAccounting(const Cluster& cluster, std::shared_ptr<const std::vector<double>> capacity_bps);

  [[nodiscard]] double capacity_bps(int32_t r) const { return capacities()[static_cast<size_t>(r)]; }
  [[nodiscard]] const std::vector<double>& capacities() const { return shared_ ? *shared_ : own_; }
  // The caller attributes the bits in flight on r before (flow backend).
  void set_capacity(int32_t r, double bps);
  // A transfer on r starts or stops moving (its rate leaves or returns to 0).
  void flow_started(int32_t r, sim::Time now);
  void flow_stopped(int32_t r, sim::Time now);
  // Bits that crossed r at its present capacity (a flow's attribution).
  void add_bits(int32_t r, double bits);
  void add_work(int32_t r, double bits);

  // in_flight: bits on r not yet attributed (0 for a backend without rates); the vector form
  // has one entry per resource, or is empty.
  [[nodiscard]] LinkStats stats(int32_t r, sim::Time now, double in_flight = 0.0) const;
  [[nodiscard]] std::vector<LinkStats> top(size_t k, sim::Time now,
                                           std::span<const double> in_flight = {}) const;
  [[nodiscard]] double max_utilization(sim::Time now, std::span<const double> in_flight = {}) const;

 private:
  struct Acc {
    double bits = 0.0;
    double busy_s = 0.0;
    double util_s = 0.0;
    int32_t active = 0;         // transfers with a positive rate on it
    int64_t busy_since_ps = 0;  // when `active` last rose from 0
  };
  Acc& mut(size_t r);
  [[nodiscard]] const Acc& at(size_t r) const;
  [[nodiscard]] double utilization(size_t r, sim::Time now, double in_flight) const;
  [[nodiscard]] double busy(size_t r, sim::Time now) const;

  const Cluster& cluster_;
  std::shared_ptr<const std::vector<double>> shared_;  // the capacities until the first change
  std::vector<double> own_;                            // from then on (shared_ reset)
  std::vector<Acc> acc_;
};

}  // namespace ct::network

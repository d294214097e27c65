#include "models/network/link_accounting.h"

#include <algorithm>

#include "models/network/cluster.h"

namespace ct::network {

LinkAccounting::LinkAccounting(const Cluster& cluster,
                               std::shared_ptr<const std::vector<double>> capacity_bps)
    : cluster_(cluster), shared_(std::move(capacity_bps)) {}

// The accumulators exist from the first transfer on (a run that counts nothing, a layout
// sweep's analytical step, never allocates one per resource).
LinkAccounting::Acc& LinkAccounting::mut(size_t r) {
  if (acc_.empty()) acc_.resize(capacities().size());
  return acc_[r];
}

const LinkAccounting::Acc& LinkAccounting::at(size_t r) const {
  static const Acc kNone;
  return r < acc_.size() ? acc_[r] : kNone;
}

void LinkAccounting::set_capacity(int32_t r, double bps) {
  if (shared_) {
    own_ = *shared_;
    shared_.reset();
  }
  own_[static_cast<size_t>(r)] = bps;
}

void LinkAccounting::flow_started(int32_t r, sim::Time now) {
  Acc& a = mut(static_cast<size_t>(r));
  if (a.active++ == 0) a.busy_since_ps = now.ps();
}

void LinkAccounting::flow_stopped(int32_t r, sim::Time now) {
  Acc& a = mut(static_cast<size_t>(r));
  if (--a.active == 0) a.busy_s += static_cast<double>(now.ps() - a.busy_since_ps) * 1e-12;
}

void LinkAccounting::add_bits(int32_t r, double bits) {
  Acc& a = mut(static_cast<size_t>(r));
  a.bits += bits;
  const double c = capacity_bps(r);
  if (c > 0.0) a.util_s += bits / c;
}

void LinkAccounting::add_work(int32_t r, double bits) {
  Acc& a = mut(static_cast<size_t>(r));
  a.bits += bits;
  const double c = capacity_bps(r);
  if (c > 0.0) {
    a.busy_s += bits / c;
    a.util_s += bits / c;
  }
}

double LinkAccounting::busy(size_t r, sim::Time now) const {
  const Acc& a = at(r);
  return a.busy_s + (a.active > 0 ? static_cast<double>(now.ps() - a.busy_since_ps) * 1e-12 : 0.0);
}

double LinkAccounting::utilization(size_t r, sim::Time now, double in_flight) const {
  if (now.ps() <= 0) return 0.0;
  double util = at(r).util_s;
  if (const double c = capacities()[r]; in_flight > 0.0 && c > 0.0) util += in_flight / c;
  return util / now.seconds();
}

LinkStats LinkAccounting::stats(int32_t r, sim::Time now, double in_flight) const {
  const auto i = static_cast<size_t>(r);
  LinkStats s;
  s.resource = r;
  s.name = cluster_.resource_name(r);
  s.bytes = (at(i).bits + in_flight) / 8.0;
  s.busy_s = busy(i, now);
  s.utilization = utilization(i, now, in_flight);
  return s;
}

std::vector<LinkStats> LinkAccounting::top(size_t k, sim::Time now, std::span<const double> in_flight) const {
  const auto extra = [&](size_t r) { return in_flight.empty() ? 0.0 : in_flight[r]; };
  std::vector<std::pair<double, int32_t>> all;
  for (size_t r = 0; r < capacities().size(); ++r) {
    const double u = utilization(r, now, extra(r));
    if (u > 0.0 || at(r).bits > 0.0 || extra(r) > 0.0 || at(r).active > 0)
      all.emplace_back(-u, static_cast<int32_t>(r));
  }
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
  std::vector<LinkStats> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    const int32_t r = all[i].second;
    out.push_back(stats(r, now, extra(static_cast<size_t>(r))));
  }
  return out;
}

double LinkAccounting::max_utilization(sim::Time now, std::span<const double> in_flight) const {
  double best = 0.0;
  for (size_t r = 0; r < capacities().size(); ++r)
    best = std::max(best, utilization(r, now, in_flight.empty() ? 0.0 : in_flight[r]));
  return best;
}

}  // namespace ct::network

#include "models/network/link_accounting.h"

#include <algorithm>

#include "models/network/cluster.h"

namespace ct::network {

LinkAccounting::LinkAccounting(const Cluster& cluster, std::vector<double> capacity_bps)
    : cluster_(cluster), capacity_(std::move(capacity_bps)), acc_(capacity_.size()) {}

void LinkAccounting::flush(size_t r, sim::Time now) {
  Acc& a = acc_[r];
  const double dt = static_cast<double>(now.ps() - a.last_ps) * 1e-12;
  if (dt > 0.0 && a.load > 0.0) {
    a.bits += a.load * dt;
    a.busy_s += dt;
    if (capacity_[r] > 0.0) a.util_s += a.load / capacity_[r] * dt;
  }
  a.last_ps = now.ps();
}

void LinkAccounting::set_capacity(int32_t r, double bps, sim::Time now) {
  flush(static_cast<size_t>(r), now);
  capacity_[static_cast<size_t>(r)] = bps;
}

void LinkAccounting::add_load(int32_t r, double delta_bps, sim::Time now) {
  const auto i = static_cast<size_t>(r);
  flush(i, now);
  acc_[i].load = std::max(0.0, acc_[i].load + delta_bps);
}

void LinkAccounting::add_work(int32_t r, double bits) {
  Acc& a = acc_[static_cast<size_t>(r)];
  a.bits += bits;
  const double c = capacity_[static_cast<size_t>(r)];
  if (c > 0.0) {
    a.busy_s += bits / c;
    a.util_s += bits / c;
  }
}

double LinkAccounting::utilization(size_t r, sim::Time now) const {
  const Acc& a = acc_[r];
  if (now.ps() <= 0) return 0.0;
  double util = a.util_s;
  const double dt = static_cast<double>(now.ps() - a.last_ps) * 1e-12;
  if (dt > 0.0 && capacity_[r] > 0.0) util += a.load / capacity_[r] * dt;
  return util / now.seconds();
}

LinkStats LinkAccounting::stats(int32_t r, sim::Time now) const {
  const auto i = static_cast<size_t>(r);
  const Acc& a = acc_[i];
  const double dt = std::max(0.0, static_cast<double>(now.ps() - a.last_ps) * 1e-12);
  LinkStats s;
  s.resource = r;
  s.name = cluster_.resource_name(r);
  s.bytes = (a.bits + a.load * dt) / 8.0;
  s.busy_s = a.busy_s + (a.load > 0.0 ? dt : 0.0);
  s.utilization = utilization(i, now);
  return s;
}

std::vector<LinkStats> LinkAccounting::top(size_t k, sim::Time now) const {
  std::vector<std::pair<double, int32_t>> all;
  all.reserve(acc_.size());
  for (size_t r = 0; r < acc_.size(); ++r) {
    const double u = utilization(r, now);
    if (u > 0.0 || acc_[r].bits > 0.0 || acc_[r].load > 0.0) all.emplace_back(-u, static_cast<int32_t>(r));
  }
  k = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
  std::vector<LinkStats> out;
  out.reserve(k);
  for (size_t i = 0; i < k; ++i) out.push_back(stats(all[i].second, now));
  return out;
}

double LinkAccounting::max_utilization(sim::Time now) const {
  double best = 0.0;
  for (size_t r = 0; r < acc_.size(); ++r) best = std::max(best, utilization(r, now));
  return best;
}

}  // namespace ct::network

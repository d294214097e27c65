// CPU launch timeline and GPU queue (maths in launch_model.h).
#include "models/trace/launch_model.h"

#include <algorithm>
#include <map>

namespace ct::trace {
namespace {

using kineto::Interval;

// Sorted, disjoint union of intervals clipped to [lo, hi].
std::vector<Interval> normalized(std::vector<Interval> v, double lo, double hi) {
  std::vector<Interval> out;
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  for (Interval i : v) {
    i.begin = std::max(i.begin, lo);
    i.end = std::min(i.end, hi);
    if (i.end <= i.begin) continue;
    if (!out.empty() && i.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// c(t): the measure of [start, end] minus the overhead up to t, by prefix sums.
class CpuClock {
 public:
  explicit CpuClock(const CpuTimeline& cpu) {
    const double lo = cpu.start_us, hi = std::max(cpu.end_us, cpu.start_us);
    double from = lo;
    for (const Interval& o : normalized(cpu.overhead, lo, hi)) {
      if (o.begin > from) pieces_.push_back({from, o.begin});
      removed_ += o.end - o.begin;
      from = o.end;
    }
    if (from < hi) pieces_.push_back({from, hi});
    prefix_.push_back(0);
    for (const Interval& p : pieces_) prefix_.push_back(prefix_.back() + (p.end - p.begin));
    end_ = hi;
  }
  // Microseconds of counted CPU time in [start, t]; t beyond the end continues at rate 1.
  [[nodiscard]] double at(double t) const {
    if (t > end_) return at(end_) + (t - end_);
    const auto it = std::upper_bound(pieces_.begin(), pieces_.end(), t,
                                     [](double x, const Interval& p) { return x < p.begin; });
    if (it == pieces_.begin()) return 0;
    const size_t i = static_cast<size_t>(it - pieces_.begin()) - 1;
    return prefix_[i] + std::min(t, pieces_[i].end) - pieces_[i].begin;
  }
  [[nodiscard]] double removed_us() const { return removed_; }

 private:
  std::vector<Interval> pieces_;
  std::vector<double> prefix_;
  double removed_ = 0, end_ = 0;
};

}  // namespace

LaunchSchedule schedule_launches(const std::vector<LaunchItem>& items, const CpuTimeline& cpu) {
  const CpuClock clock(cpu);
  std::vector<Interval> syncs;
  for (const Interval& s : cpu.syncs) {
    if (s.begin >= cpu.start_us && s.begin <= cpu.end_us) syncs.push_back(s);
  }
  std::sort(syncs.begin(), syncs.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });

  LaunchSchedule out;
  out.start_s.reserve(items.size());
  out.overhead_removed_s = clock.removed_us() * 1e-6;
  double shift_us = 0;    // m(t) - c(t)
  double issued_end = 0;  // latest end of the items issued so far, seconds from the step start
  double issue = cpu.start_us;
  size_t next_sync = 0;
  // A sync returns when the GPU work issued before it is done.
  const auto pass_syncs_before = [&](double t) {
    while (next_sync < syncs.size() && syncs[next_sync].end <= t) {
      const Interval& s = syncs[next_sync++];
      const double m_begin = clock.at(s.begin) + shift_us;
      const double wait = std::max(0.0, issued_end * 1e6 - m_begin);
      out.sync_wait_s += wait * 1e-6;
      shift_us += wait - (clock.at(s.end) - clock.at(s.begin));
    }
  };
  std::map<int64_t, double> stream_end;  // per stream: its latest item's end
  std::vector<double> end(items.size(), 0.0);
  for (size_t i = 0; i < items.size(); ++i) {
    const LaunchItem& item = items[i];
    issue = std::max(issue, item.issue_us);
    pass_syncs_before(issue);
    double start = std::max(0.0, (clock.at(issue) + shift_us) * 1e-6 + item.latency_s);
    const auto previous = stream_end.find(item.stream);
    if (previous != stream_end.end()) start = std::max(start, previous->second + item.gap_s);
    if (item.waits_for >= 0 && static_cast<size_t>(item.waits_for) < i)
      start = std::max(start, end[static_cast<size_t>(item.waits_for)]);
    out.start_s.push_back(start);
    end[i] = start + item.seconds;
    stream_end[item.stream] = end[i];
    issued_end = std::max(issued_end, end[i]);
  }
  pass_syncs_before(std::max(issue, cpu.end_us));
  const double cpu_end = (clock.at(cpu.end_us) + shift_us) * 1e-6;
  out.busy_end_s = issued_end;
  out.step_s = std::max(issued_end, cpu_end);
  out.after_last_kernel_s = out.step_s - issued_end;
  // Idle in start order: the gaps of the union of the items' intervals.
  std::vector<size_t> by_start(items.size());
  for (size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](size_t a, size_t b) { return out.start_s[a] < out.start_s[b]; });
  double frontier = 0;
  for (size_t k = 0; k < by_start.size(); ++k) {
    const size_t i = by_start[k];
    const double idle = std::max(0.0, out.start_s[i] - frontier);
    const double gpu_part = k == 0 ? 0.0 : std::min(idle, items[i].gap_s);
    out.gpu_gap_idle_s += gpu_part;
    out.launch_bound_idle_s += idle - gpu_part;
    if (k == 0) out.before_first_launch_s = out.start_s[i];
    frontier = std::max(frontier, end[i]);
  }
  return out;
}

}  // namespace ct::trace

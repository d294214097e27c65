// Discrete-event Monte Carlo of a training campaign; the model is stated in campaign.h.
#include "models/reliability/campaign.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/rng.h"

namespace ct::reliability {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void require(bool ok, const std::string& key, const std::string& what, double value) {
  if (!ok) throw std::invalid_argument(key + " " + what + ", got " + std::to_string(value));
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0.0; }

enum class Phase { train, save, detect, wait, restart };

// One replica's state machine. Events: node failures (a min-heap of (time, slot)), link
// failures, the end of the current phase, an asynchronous flush becoming durable, and the
// campaign end. Ties resolve in the order commit, phase end, node failure, link failure.
class Replica {
 public:
  Replica(const CampaignSpec& spec, int replica)
      : s_(spec), rng_(spec.seed, kCampaignStream + static_cast<uint64_t>(replica)) {
    node_rate_ = node_failure_rate_per_s(s_.failures, s_.job.gpus_per_node);
    link_rate_ = s_.job.links * s_.failures.link_failure_rate_per_day / kSecondsPerDay;
    if (s_.failures.distribution == FailureDistribution::weibull && node_rate_ > 0.0) {
      const double k = s_.failures.weibull_shape;
      weibull_scale_ = (1.0 / node_rate_) / std::tgamma(1.0 + 1.0 / k);
    }
    pool_ = s_.recovery.hot_spares;
    heap_.reserve(static_cast<size_t>(s_.job.nodes));
    for (int slot = 0; slot < s_.job.nodes; ++slot) join(slot);
    next_link_ = link_rate_ > 0.0 ? rng_.exponential(1.0 / link_rate_) : kInf;
    phase_ = Phase::train;
    phase_end_ = s_.checkpoint.interval_s;
  }

  ReplicaResult run() {
    const double end = s_.duration_s;
    for (;;) {
      const double commit = inflight_ ? commit_time_ : kInf;
      const double node = heap_.empty() ? kInf : heap_.front().first;
      const double t = std::min({commit, phase_end_, node, next_link_});
      if (!(t < end)) break;
      if (commit == t) {
        advance(t);
        commit_inflight();
      } else if (phase_end_ == t) {
        advance(t);
        end_phase();
      } else if (node == t) {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        const int slot = heap_.back().second;
        heap_.pop_back();
        advance(t);
        free_slots_.push_back(slot);
        repairs_.push_back(t + s_.recovery.repair_s);
        fail();
      } else {
        advance(t);
        next_link_ = t + rng_.exponential(1.0 / link_rate_);
        fail();
      }
    }
    advance(end);
    r_.time.useful_s += pend_work_;
    r_.time.checkpoint_s += pend_save_;
    r_.goodput = r_.time.useful_s / end;
    return r_;
  }

 private:
  void join(int slot) {
    if (!(node_rate_ > 0.0)) return;
    const double life = s_.failures.distribution == FailureDistribution::weibull
                            ? rng_.weibull(s_.failures.weibull_shape, weibull_scale_)
                            : rng_.exponential(1.0 / node_rate_);
    heap_.emplace_back(now_ + life, slot);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

  // Moves the clock to t, charging the elapsed time to the current phase.
  void advance(double t) {
    const double dt = t - now_;
    switch (phase_) {
      case Phase::train: pend_work_ += dt; break;
      case Phase::save: pend_save_ += dt; break;
      case Phase::detect: r_.time.detection_s += dt; break;
      case Phase::wait: r_.time.repair_wait_s += dt; break;
      case Phase::restart: r_.time.restart_s += dt; break;
    }
    now_ = t;
  }

  void fail() {
    ++r_.failures;
    if (phase_ == Phase::train || phase_ == Phase::save) {
      ++r_.interruptions;
      interrupted_at_ = now_;
    }
    r_.time.lost_work_s += pend_work_ + pend_save_;
    pend_work_ = pend_save_ = 0.0;
    inflight_ = false;
    phase_ = Phase::detect;
    phase_end_ = now_ + s_.recovery.detection_s;
  }

  void commit_inflight() {
    r_.time.useful_s += inflight_work_;
    r_.time.checkpoint_s += inflight_save_;
    pend_work_ -= inflight_work_;
    pend_save_ -= inflight_save_;
    if (phase_ == Phase::save) capture_work_ -= inflight_work_;  // a save waiting for this flush
    inflight_ = false;
    ++r_.checkpoints;
  }

  void end_phase() {
    switch (phase_) {
      case Phase::train:
        capture_work_ = pend_work_;
        phase_ = Phase::save;
        phase_end_ = std::max(now_, inflight_ ? commit_time_ : now_) + s_.checkpoint.blocking_s;
        return;
      case Phase::save:
        if (s_.checkpoint.flush_s > 0.0) {
          inflight_ = true;
          commit_time_ = now_ + s_.checkpoint.flush_s;
          inflight_work_ = capture_work_;
          inflight_save_ = pend_save_;
        } else {
          r_.time.useful_s += pend_work_;
          r_.time.checkpoint_s += pend_save_;
          pend_work_ = pend_save_ = 0.0;
          ++r_.checkpoints;
        }
        start_training();
        return;
      case Phase::detect:
      case Phase::wait:
        fill_slots();
        return;
      case Phase::restart:
        ++r_.rto_count;
        r_.rto_sum_s += now_ - interrupted_at_;
        start_training();
        return;
    }
  }

  void start_training() {
    phase_ = Phase::train;
    phase_end_ = now_ + s_.checkpoint.interval_s;
  }

  void fill_slots() {
    while (!repairs_.empty() && repairs_.front() <= now_) {
      repairs_.pop_front();
      ++pool_;
    }
    while (!free_slots_.empty() && pool_ > 0) {
      --pool_;
      const int slot = free_slots_.back();
      free_slots_.pop_back();
      join(slot);
    }
    if (!free_slots_.empty()) {
      if (phase_ != Phase::wait) ++r_.repair_waits;
      phase_ = Phase::wait;
      phase_end_ = repairs_.front();  // a failed node is always in repair here
      return;
    }
    phase_ = Phase::restart;
    phase_end_ = now_ + s_.recovery.restart_s + s_.recovery.restore_s;
  }

  const CampaignSpec& s_;
  sim::Rng rng_;
  double node_rate_ = 0.0, link_rate_ = 0.0, weibull_scale_ = 0.0;
  std::vector<std::pair<double, int>> heap_;  // (failure time, slot), min-heap
  std::vector<int> free_slots_;
  std::deque<double> repairs_;  // return times, non-decreasing (constant repair time)
  int pool_ = 0;
  double next_link_ = kInf;
  double now_ = 0.0;
  Phase phase_ = Phase::train;
  double phase_end_ = 0.0;
  double pend_work_ = 0.0, pend_save_ = 0.0;  // since the last durable capture point
  double capture_work_ = 0.0;
  bool inflight_ = false;
  double commit_time_ = 0.0, inflight_work_ = 0.0, inflight_save_ = 0.0;
  double interrupted_at_ = 0.0;
  ReplicaResult r_;
};

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

void validate(const CampaignSpec& s) {
  require(std::isfinite(s.duration_s) && s.duration_s > 0.0, "campaign.duration", "must be positive", s.duration_s);
  require(s.repeats >= 1, "campaign.repeats", "must be at least 1", s.repeats);
  require(std::isfinite(s.checkpoint.interval_s) && s.checkpoint.interval_s > 0.0,
          "training_job.checkpoint.interval", "must be positive (seconds)", s.checkpoint.interval_s);
  require(finite_nonneg(s.checkpoint.blocking_s), "training_job.checkpoint",
          "save cost must be >= 0 (seconds)", s.checkpoint.blocking_s);
  require(finite_nonneg(s.checkpoint.flush_s), "training_job.checkpoint.async_save",
          "flush time must be >= 0 (seconds)", s.checkpoint.flush_s);
  require(finite_nonneg(s.recovery.detection_s), "recovery.detection", "must be >= 0 (seconds)", s.recovery.detection_s);
  require(finite_nonneg(s.recovery.restart_s), "recovery.restart", "must be >= 0 (seconds)", s.recovery.restart_s);
  require(finite_nonneg(s.recovery.restore_s), "recovery.restart", "restore time must be >= 0 (seconds)",
          s.recovery.restore_s);
  require(s.recovery.hot_spares >= 0, "recovery.hot_spares", "must be >= 0 nodes", s.recovery.hot_spares);
  require(finite_nonneg(s.recovery.repair_s), "recovery.repair", "must be >= 0 (seconds)", s.recovery.repair_s);
  validate(s.failures, s.job);
}

ReplicaResult run_replica(const CampaignSpec& spec, int replica) {
  validate(spec);
  return Replica(spec, replica).run();
}

CampaignResult run_campaign(const CampaignSpec& spec) {
  validate(spec);
  CampaignResult out;
  out.replicas.reserve(static_cast<size_t>(spec.repeats));
  std::vector<double> goodputs;
  int interruptions = 0, rto_count = 0;
  double rto_sum = 0.0;
  for (int r = 0; r < spec.repeats; ++r) {
    out.replicas.push_back(Replica(spec, r).run());
    const ReplicaResult& x = out.replicas.back();
    goodputs.push_back(x.goodput);
    interruptions += x.interruptions;
    rto_count += x.rto_count;
    rto_sum += x.rto_sum_s;
    out.failures_mean += x.failures;
    out.repair_waits_mean += x.repair_waits;
    out.time_mean.useful_s += x.time.useful_s;
    out.time_mean.lost_work_s += x.time.lost_work_s;
    out.time_mean.checkpoint_s += x.time.checkpoint_s;
    out.time_mean.detection_s += x.time.detection_s;
    out.time_mean.repair_wait_s += x.time.repair_wait_s;
    out.time_mean.restart_s += x.time.restart_s;
  }
  const auto n = static_cast<double>(spec.repeats);
  double sum = 0.0;
  for (double g : goodputs) sum += g;
  out.goodput_mean = sum / n;
  double ss = 0.0;
  for (double g : goodputs) ss += (g - out.goodput_mean) * (g - out.goodput_mean);
  out.goodput_stddev = spec.repeats > 1 ? std::sqrt(ss / (n - 1.0)) : 0.0;
  std::sort(goodputs.begin(), goodputs.end());
  out.goodput_p10 = quantile(goodputs, 0.10);
  out.goodput_p90 = quantile(goodputs, 0.90);
  out.interruptions_mean = interruptions / n;
  out.failures_mean /= n;
  out.repair_waits_mean /= n;
  out.rto_mean_s = rto_count > 0 ? rto_sum / rto_count : 0.0;
  out.time_mean.useful_s /= n;
  out.time_mean.lost_work_s /= n;
  out.time_mean.checkpoint_s /= n;
  out.time_mean.detection_s /= n;
  out.time_mean.repair_wait_s /= n;
  out.time_mean.restart_s /= n;
  return out;
}

}  // namespace ct::reliability

// Discrete-event Monte Carlo of a training campaign; the model is stated in campaign.h.
#include "models/reliability/campaign.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/progress.h"
#include "sim/rng.h"
#include "sim/stats.h"

namespace ct::reliability {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Double seconds keep microsecond resolution up to 2^53 us, about 285 years.

void require(bool ok, const std::string& key, const std::string& what, double value) {
  if (!ok) throw std::invalid_argument(key + " " + what + ", got " + std::to_string(value));
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0.0; }

using Phase = CampaignPhase;

int index(FailureClass c) { return static_cast<int>(c); }

// One replica's state machine. Events: node failures (a min-heap of (time, slot)), job-wide
// failures, the end of the current phase, an asynchronous flush becoming durable, and the
// campaign end. Ties resolve in the order commit, phase end, node failure, job-wide failure.
class Replica {
 public:
  Replica(const CampaignSpec& spec, int replica)
      : s_(spec), rng_(spec.seed, kCampaignStream + static_cast<uint64_t>(replica)) {
    node_rate_ = node_failure_rate_per_s(s_.failures, s_.job);
    wide_rate_ = job_wide_failure_rate_per_s(s_.failures, s_.job);
    for (size_t k = 0; k < kNodeClasses.size(); ++k) {
      node_weights_[k] = class_rate_per_s(s_.failures, s_.job, kNodeClasses[k]);
      wide_weights_[k] = class_rate_per_s(s_.failures, s_.job, kJobWideClasses[k]);
    }
    if (s_.failures.distribution == FailureDistribution::weibull && node_rate_ > 0.0) {
      const double k = s_.failures.weibull_shape;
      weibull_scale_ = (1.0 / node_rate_) / std::tgamma(1.0 + 1.0 / k);
    }
    screening_ = s_.recovery.health_check_s > 0.0 && s_.recovery.health_check_coverage > 0.0;
    slot_latent_.assign(static_cast<size_t>(s_.job.nodes), false);
    heap_.reserve(static_cast<size_t>(s_.job.nodes));
    // The job's own nodes and the hot spares form the pool the slots are filled from.
    pool_ = s_.job.nodes + s_.recovery.hot_spares;
    for (int slot = s_.job.nodes - 1; slot >= 0; --slot) free_slots_.push_back(slot);
    next_wide_ = wide_rate_ > 0.0 ? rng_.exponential(1.0 / wide_rate_) : kInf;
    starting_ = true;
    fill_slots();
  }

  ReplicaResult run() {
    const double end = s_.duration_s;
    uint64_t events = 0;  // reported to the progress line in blocks
    for (;;) {
      const double commit = inflight_ ? commit_time_ : kInf;
      const double node = heap_.empty() ? kInf : heap_.front().first;
      const double t = std::min({commit, phase_end_, node, next_wide_});
      if (!(t < end)) break;
      if ((++events & 4095U) == 0) sim::progress::add(4096);
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
        fail(slot_latent_[static_cast<size_t>(slot)] ? FailureClass::latent
                                                     : draw(kNodeClasses, node_weights_));
      } else {
        advance(t);
        next_wide_ = t + rng_.exponential(1.0 / wide_rate_);
        fail(draw(kJobWideClasses, wide_weights_));
      }
    }
    sim::progress::add(events & 4095U);
    advance(end);
    r_.time.useful_s += pend_work_;
    r_.time.checkpoint_s += pend_save_;
    r_.goodput = r_.time.useful_s / end;
    return r_;
  }

 private:
  // A class drawn in proportion to its weight (one uniform draw; none for a single class).
  FailureClass draw(const std::array<FailureClass, 4>& classes, const std::array<double, 4>& weights) {
    double total = 0.0;
    int nonzero = 0;
    for (double w : weights) {
      total += w;
      nonzero += w > 0.0 ? 1 : 0;
    }
    size_t k = 0;
    if (nonzero > 1) {
      double u = rng_.uniform01() * total;
      while (k + 1 < weights.size() && (weights[k] <= 0.0 || u >= weights[k])) {
        u -= weights[k];
        ++k;
      }
    } else {
      while (k + 1 < weights.size() && weights[k] <= 0.0) ++k;
    }
    return classes[k];
  }

  // A node from the pool takes `slot`; false when the health check rejects it (to repair).
  bool join(int slot) {
    bool defective = false;
    if (s_.failures.latent_defect_fraction > 0.0)
      defective = rng_.uniform01() < s_.failures.latent_defect_fraction;
    if (defective && screening_ && rng_.uniform01() < s_.recovery.health_check_coverage) {
      ++r_.defects_caught;
      repairs_.push_back(now_ + s_.recovery.repair_s);
      return false;
    }
    double life = kInf;
    if (node_rate_ > 0.0) {
      life = s_.failures.distribution == FailureDistribution::weibull
                 ? rng_.weibull(s_.failures.weibull_shape, weibull_scale_)
                 : rng_.exponential(1.0 / node_rate_);
    }
    bool latent = false;
    if (defective) {
      const double latent_life = rng_.exponential(s_.failures.latent_defect_mean_s);
      latent = latent_life < life;
      life = std::min(life, latent_life);
    }
    slot_latent_[static_cast<size_t>(slot)] = latent;
    if (life < kInf) {
      heap_.emplace_back(now_ + life, slot);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
    return true;
  }

  void enter(Phase phase, double end) {
    phase_ = phase;
    phase_end_ = end;
    if (s_.record_phases && r_.phases.size() < kMaxPhaseChanges &&
        (r_.phases.empty() || r_.phases.back().phase != phase)) {
      r_.phases.push_back({now_, phase});
    }
  }

  // Moves the clock to t, charging the elapsed time to the current phase.
  void advance(double t) {
    const double dt = t - now_;
    switch (phase_) {
      case Phase::train:
        pend_work_ += dt;
        break;
      case Phase::save:
        pend_save_ += dt;
        break;
      case Phase::detect:
        r_.time.detection_s += dt;
        break;
      case Phase::wait:
        r_.time.repair_wait_s += dt;
        break;
      case Phase::check:
        r_.time.health_check_s += dt;
        break;
      case Phase::restart:
        r_.time.restart_s += dt;
        break;
    }
    now_ = t;
  }

  void fail(FailureClass cls) {
    ++r_.failures;
    ++r_.failures_by_class[static_cast<size_t>(index(cls))];
    if (phase_ == Phase::train || phase_ == Phase::save) {
      ++r_.interruptions;
      ++r_.interruptions_by_class[static_cast<size_t>(index(cls))];
      interrupted_at_ = now_;
    }
    r_.time.lost_work_s += pend_work_ + pend_save_;
    pend_work_ = pend_save_ = 0.0;
    inflight_ = false;
    starting_ = false;
    enter(Phase::detect,
          now_ + (cls == FailureClass::hang ? s_.recovery.hang_detection_s : s_.recovery.detection_s));
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
        enter(Phase::save, std::max(now_, inflight_ ? commit_time_ : now_) + s_.checkpoint.blocking_s);
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
      case Phase::check:
        relaunch();
        return;
      case Phase::restart:
        ++r_.rto_count;
        r_.rto_sum_s += now_ - interrupted_at_;
        start_training();
        return;
    }
  }

  void start_training() { enter(Phase::train, now_ + s_.checkpoint.interval_s); }

  void fill_slots() {
    while (!repairs_.empty() && repairs_.front() <= now_) {
      repairs_.pop_front();
      ++pool_;
    }
    while (!free_slots_.empty() && pool_ > 0) {
      --pool_;
      const int slot = free_slots_.back();
      if (join(slot)) free_slots_.pop_back();
    }
    if (!free_slots_.empty()) {
      if (phase_ != Phase::wait) ++r_.repair_waits;
      enter(Phase::wait, repairs_.front());  // a failed or rejected node is always in repair here
      return;
    }
    if (s_.recovery.health_check_s > 0.0) {
      enter(Phase::check, now_ + s_.recovery.health_check_s);
      return;
    }
    relaunch();
  }

  // After the health check: the first launch trains at once, a recovery restarts first.
  void relaunch() {
    if (starting_) {
      starting_ = false;
      start_training();
      return;
    }
    enter(Phase::restart, now_ + s_.recovery.restart_s + s_.recovery.restore_s);
  }

  const CampaignSpec& s_;
  sim::Rng rng_;
  double node_rate_ = 0.0, wide_rate_ = 0.0, weibull_scale_ = 0.0;
  std::array<double, 4> node_weights_{}, wide_weights_{};
  bool screening_ = false;
  bool starting_ = true;
  std::vector<bool> slot_latent_;             // the slot's node will fail of its defect
  std::vector<std::pair<double, int>> heap_;  // (failure time, slot), min-heap
  std::vector<int> free_slots_;
  std::deque<double> repairs_;  // return times, non-decreasing (constant repair time)
  int pool_ = 0;
  double next_wide_ = kInf;
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

}  // namespace

const char* campaign_phase_name(CampaignPhase p) {
  switch (p) {
    case CampaignPhase::train:
      return "train";
    case CampaignPhase::save:
      return "save";
    case CampaignPhase::detect:
      return "detect";
    case CampaignPhase::wait:
      return "wait";
    case CampaignPhase::check:
      return "check";
    case CampaignPhase::restart:
      return "restart";
  }
  return "?";
}

void validate(const CampaignSpec& s) {
  require(std::isfinite(s.duration_s) && s.duration_s > 0.0, "campaign.duration", "must be positive",
          s.duration_s);
  require(s.duration_s <= kMaxCampaignSeconds, "campaign.duration",
          "exceeds the campaign clock's range of 100 years (seconds)", s.duration_s);
  require(s.repeats >= 1, "campaign.repeats", "must be at least 1", s.repeats);
  require(std::isfinite(s.checkpoint.interval_s) && s.checkpoint.interval_s > 0.0,
          "training_job.checkpoint.interval", "must be positive (seconds)", s.checkpoint.interval_s);
  require(finite_nonneg(s.checkpoint.blocking_s), "training_job.checkpoint",
          "save cost must be >= 0 (seconds)", s.checkpoint.blocking_s);
  require(finite_nonneg(s.checkpoint.flush_s), "training_job.checkpoint.async_save",
          "flush time must be >= 0 (seconds)", s.checkpoint.flush_s);
  require(s.checkpoint.flush_s > 0.0 || s.checkpoint.interval_s >= s.checkpoint.blocking_s,
          "training_job.checkpoint.interval",
          "(or interval_steps x step time) must not be shorter than the synchronous save of " +
              std::to_string(s.checkpoint.blocking_s) + " s",
          s.checkpoint.interval_s);
  require(finite_nonneg(s.recovery.detection_s), "recovery.detection", "must be >= 0 (seconds)",
          s.recovery.detection_s);
  require(finite_nonneg(s.recovery.hang_detection_s), "training_job.runtime.collective_timeout",
          "must be >= 0 (seconds)", s.recovery.hang_detection_s);
  require(finite_nonneg(s.recovery.health_check_s), "recovery.health_check", "must be >= 0 (seconds)",
          s.recovery.health_check_s);
  require(s.recovery.health_check_coverage >= 0.0 && s.recovery.health_check_coverage <= 1.0,
          "recovery.health_check_coverage", "must be within [0, 1]", s.recovery.health_check_coverage);
  require(s.threads >= 0, "campaign.threads", "must be >= 0 (0 = all cores)", s.threads);
  require(finite_nonneg(s.recovery.restart_s), "recovery.restart", "must be >= 0 (seconds)",
          s.recovery.restart_s);
  require(finite_nonneg(s.recovery.restore_s), "recovery.restart", "restore time must be >= 0 (seconds)",
          s.recovery.restore_s);
  require(s.recovery.hot_spares >= 0, "recovery.hot_spares", "must be >= 0 nodes", s.recovery.hot_spares);
  require(finite_nonneg(s.recovery.repair_s), "recovery.repair", "must be >= 0 (seconds)",
          s.recovery.repair_s);
  validate(s.failures, s.job);
}

ReplicaResult run_replica(const CampaignSpec& spec, int replica) {
  validate(spec);
  return Replica(spec, replica).run();
}

namespace {

std::vector<ReplicaResult> run_replicas(const CampaignSpec& spec) {
  std::vector<ReplicaResult> replicas(static_cast<size_t>(spec.repeats));
  // For the progress line's time left: about two events per checkpoint (save, commit) and five
  // per failure (the failure and its recovery phases) in every replica.
  const double failures = (node_failure_rate_per_s(spec.failures, spec.job) +
                           job_wide_failure_rate_per_s(spec.failures, spec.job)) *
                          spec.duration_s;
  const double checkpoints =
      spec.checkpoint.interval_s > 0 ? spec.duration_s / spec.checkpoint.interval_s : 0.0;
  sim::progress::extend(static_cast<double>(spec.repeats) * (2.0 * checkpoints + 5.0 * failures));
  // More threads than cores only oversubscribe (oneTBB warns); the result does not change.
  const int cores = tbb::info::default_concurrency();
  const int threads = spec.threads > 0 ? std::min(spec.threads, cores) : cores;
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<int>(0, spec.repeats), [&](const tbb::blocked_range<int>& range) {
      for (int r = range.begin(); r != range.end(); ++r)
        replicas[static_cast<size_t>(r)] = Replica(spec, r).run();
    });
  });
  return replicas;
}

CampaignResult summarize(const CampaignSpec& spec, std::vector<ReplicaResult> replicas) {
  CampaignResult out;
  std::vector<double> goodputs;
  goodputs.reserve(replicas.size());
  int interruptions = 0, rto_count = 0;
  double rto_sum = 0.0;
  for (const ReplicaResult& x : replicas) {
    goodputs.push_back(x.goodput);
    interruptions += x.interruptions;
    rto_count += x.rto_count;
    rto_sum += x.rto_sum_s;
    out.failures_mean += x.failures;
    out.repair_waits_mean += x.repair_waits;
    out.defects_caught_mean += x.defects_caught;
    for (size_t k = 0; k < x.failures_by_class.size(); ++k) {
      out.failures_by_class[k] += x.failures_by_class[k];
      out.interruptions_by_class[k] += x.interruptions_by_class[k];
    }
    out.time_mean.useful_s += x.time.useful_s;
    out.time_mean.lost_work_s += x.time.lost_work_s;
    out.time_mean.checkpoint_s += x.time.checkpoint_s;
    out.time_mean.detection_s += x.time.detection_s;
    out.time_mean.repair_wait_s += x.time.repair_wait_s;
    out.time_mean.restart_s += x.time.restart_s;
    out.time_mean.health_check_s += x.time.health_check_s;
  }
  const auto n = static_cast<double>(spec.repeats);
  double sum = 0.0;
  for (double g : goodputs) sum += g;
  out.goodput_mean = sum / n;
  double ss = 0.0;
  for (double g : goodputs) ss += (g - out.goodput_mean) * (g - out.goodput_mean);
  out.goodput_stddev = spec.repeats > 1 ? std::sqrt(ss / (n - 1.0)) : 0.0;
  std::sort(goodputs.begin(), goodputs.end());
  out.goodput_p10 = sim::interpolated_quantile(goodputs, 0.10);
  out.goodput_p90 = sim::interpolated_quantile(goodputs, 0.90);
  out.interruptions_mean = interruptions / n;
  out.failures_mean /= n;
  out.repair_waits_mean /= n;
  out.defects_caught_mean /= n;
  for (size_t k = 0; k < out.failures_by_class.size(); ++k) {
    out.failures_by_class[k] /= n;
    out.interruptions_by_class[k] /= n;
  }
  out.rto_mean_s = rto_count > 0 ? rto_sum / rto_count : 0.0;
  out.time_mean.useful_s /= n;
  out.time_mean.lost_work_s /= n;
  out.time_mean.checkpoint_s /= n;
  out.time_mean.detection_s /= n;
  out.time_mean.repair_wait_s /= n;
  out.time_mean.restart_s /= n;
  out.time_mean.health_check_s /= n;
  out.replicas = std::move(replicas);
  return out;
}

}  // namespace

CampaignResult run_campaign(const CampaignSpec& spec) {
  validate(spec);
  return summarize(spec, run_replicas(spec));
}

IntervalCurve simulate_interval_curve(const CampaignSpec& spec, const std::vector<double>& intervals) {
  require(!intervals.empty(), "training_job.checkpoint.interval", "curve needs at least one interval", 0.0);
  for (size_t i = 0; i < intervals.size(); ++i) {
    require(intervals[i] > 0.0 && (i == 0 || intervals[i] > intervals[i - 1]),
            "training_job.checkpoint.interval", "curve intervals must be positive and ascending",
            intervals[i]);
  }
  IntervalCurve curve;
  size_t best = 0;
  for (double tau : intervals) {
    CampaignSpec at = spec;
    at.checkpoint.interval_s = tau;
    const CampaignResult r = run_campaign(at);
    const double stderr_mean = r.goodput_stddev / std::sqrt(static_cast<double>(at.repeats));
    curve.points.push_back({tau, r.goodput_mean, stderr_mean});
    if (r.goodput_mean > curve.points[best].goodput_mean) best = curve.points.size() - 1;
  }
  curve.best_interval_s = curve.points[best].interval_s;
  curve.best_inside = best > 0 && best + 1 < curve.points.size();
  if (curve.best_inside) {
    // Vertex of the parabola through (log tau, goodput) at best-1, best, best+1.
    const double x0 = std::log(curve.points[best - 1].interval_s), y0 = curve.points[best - 1].goodput_mean;
    const double x1 = std::log(curve.points[best].interval_s), y1 = curve.points[best].goodput_mean;
    const double x2 = std::log(curve.points[best + 1].interval_s), y2 = curve.points[best + 1].goodput_mean;
    const double d01 = (y1 - y0) / (x1 - x0), d12 = (y2 - y1) / (x2 - x1);
    const double a = (d12 - d01) / (x2 - x0);
    if (a < 0.0) {
      const double vertex = 0.5 * (x0 + x1) - d01 / (2.0 * a);
      curve.best_interval_s = std::exp(std::clamp(vertex, x0, x2));
    }
  }
  return curve;
}

}  // namespace ct::reliability

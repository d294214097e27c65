// DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
// SIGCOMM'15, Sec. 3.1-3.2) for one flow (one RDMA queue pair). Rates in bit/s.
//
// State: current rate Rc, target rate Rt, alpha, timer count T, byte-counter count BC.
// Start: Rc = Rt = line rate, alpha = initial_alpha (1), T = BC = 0.
// On a CNP (the notification point sends at most one per cnp_interval per flow):
//     Rt = Rc;   Rc = max(min_rate, Rc (1 - alpha / 2));   alpha = (1 - g) alpha + g;
//     T = BC = 0; the byte counter and the rate-increase timer restart.
// Alpha timer: every alpha_period without a CNP, alpha = (1 - g) alpha. Evaluated lazily: at a
//     CNP, alpha *= (1 - g)^k with k = whole periods since the last alpha update, which is
//     exactly what a free-running timer reset at each CNP does, without an event per period.
// Rate increase events: the increase timer (every increase_period: T += 1) and the byte counter
//     (every byte_counter bytes sent: BC += 1). On each event:
//     max(T, BC) <  F            fast recovery:   Rc = (Rt + Rc) / 2
//     min(T, BC) >  F            hyper increase:  Rt += (min(T, BC) - F) R_HAI;  Rc = (Rt + Rc) / 2
//     otherwise                  additive:        Rt += R_AI;                    Rc = (Rt + Rc) / 2
//     Rt and Rc are capped at the line rate; Rc within 0.1% of it snaps to it, and a flow back
//     at line rate stops its timer and byte counter until the next CNP.
// Defaults are the paper's (g = 1/256, 55 us timers, 10 MB byte counter, F = 5, R_AI = 40 Mb/s,
// CNP interval 50 us); R_HAI = 5 x R_AI = 200 Mb/s and min_rate = 100 Mb/s are our choices.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/units.h"

namespace ct::network {

struct DcqcnParams {
  double g = 1.0 / 256.0;
  double initial_alpha = 1.0;
  sim::Duration alpha_period = sim::Duration::us(55);
  sim::Duration increase_period = sim::Duration::us(55);
  int64_t byte_counter = 10'000'000;  // bytes
  int fast_recovery_steps = 5;        // F
  double rai_bps = 40e6;
  double rhai_bps = 200e6;
  double min_rate_bps = 100e6;
  sim::Duration cnp_interval = sim::Duration::us(50);  // notification point, per flow
};

class Dcqcn {
 public:
  void reset(double line_rate_bps, int64_t now_ps, const DcqcnParams& p) {
    line_ = rc_ = rt_ = line_rate_bps;
    alpha_ = p.initial_alpha;
    alpha_ps_ = now_ps;
    t_ = bc_ = 0;
    bytes_ = 0;
  }

  void on_cnp(int64_t now_ps, const DcqcnParams& p) {
    const int64_t period = p.alpha_period.count_ps();
    if (period > 0 && now_ps > alpha_ps_) {
      const int64_t k = (now_ps - alpha_ps_) / period;
      alpha_ *= std::pow(1.0 - p.g, static_cast<double>(k));
    }
    rt_ = rc_;
    rc_ = std::max(p.min_rate_bps, rc_ * (1.0 - alpha_ / 2.0));
    alpha_ = (1.0 - p.g) * alpha_ + p.g;
    alpha_ps_ = now_ps;
    t_ = bc_ = 0;
    bytes_ = 0;
  }

  // The increase timer fired; returns true while the timer should keep running.
  bool on_timer(const DcqcnParams& p) {
    ++t_;
    increase(p);
    return !at_line_rate();
  }

  // `bytes` were sent; returns true when the byte counter produced an increase event.
  bool on_bytes(int64_t bytes, const DcqcnParams& p) {
    if (at_line_rate() || p.byte_counter <= 0) return false;
    bytes_ += bytes;
    if (bytes_ < p.byte_counter) return false;
    bytes_ -= p.byte_counter;
    ++bc_;
    increase(p);
    return true;
  }

  [[nodiscard]] double rate() const { return rc_; }
  [[nodiscard]] double target() const { return rt_; }
  [[nodiscard]] double alpha() const { return alpha_; }
  [[nodiscard]] bool at_line_rate() const { return rc_ >= line_; }

 private:
  void increase(const DcqcnParams& p) {
    const int lo = std::min(t_, bc_);
    const int hi = std::max(t_, bc_);
    const int f = p.fast_recovery_steps;
    if (hi < f) {
      // fast recovery: target unchanged
    } else if (lo > f) {
      rt_ += static_cast<double>(lo - f) * p.rhai_bps;
    } else {
      rt_ += p.rai_bps;
    }
    rt_ = std::min(rt_, line_);
    rc_ = std::min(line_, (rt_ + rc_) / 2.0);
    if (rc_ >= line_ * (1.0 - 1e-3)) rc_ = rt_ = line_;
  }

  double line_ = 0.0;
  double rc_ = 0.0;
  double rt_ = 0.0;
  double alpha_ = 1.0;
  int64_t alpha_ps_ = 0;
  int t_ = 0;
  int bc_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace ct::network

// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM'15) as
// NVIDIA ConnectX NICs run it, for one flow (one RDMA queue pair). Rates in bit/s.
//
// Notification point (receiving NIC): a CE-marked packet makes it send a CNP unless it sent one
// for the flow less than `cnp_interval` ago (firmware min_time_between_cnps; 0 = one per
// marked packet, as the ns-3 RDMA model does with per-packet ACKs).
//
// Reaction point (sending NIC), state: current rate Rc, target rate Rt, alpha, the stage
// counters T (timer) and BC (byte counter). Every flow starts at line rate and does nothing
// until its first CNP. From the first CNP (at t0) three clocks run on a grid that starts at t0:
//   alpha: at the end of every alpha_period, alpha = (1 - g) alpha + g if a CNP arrived during
//     the period, else (1 - g) alpha (firmware dce_tcp_g, dce_tcp_rtt). The first CNP sets
//     alpha = initial_alpha and does not count for its own period.
//   decrease: at the grid points t0 + k rate_reduce_period, if a CNP arrived since the last
//     point: Rt = Rc when clamping applies (below), then
//       Rc = max(min_rate, Rc max(1 - alpha / 2, min_dec_factor)),
//     T = BC = 0, the byte count and the increase timer restart. At most one cut per period
//     (firmware rate_reduce_monitor_period, rpg_min_dec_fac, rpg_min_rate, rpg_gd = 11: alpha/2).
//   increase: every increase_period after the last cut (rpg_time_reset) and every byte_counter
//     bytes sent since it (rpg_byte_reset; 0 = no byte counter) an increase event runs on the
//     counters as they were before it, then bumps its own counter:
//       byte counter on:  max(T, BC) < F: fast recovery;  min(T, BC) > F: hyper;  else additive
//       byte counter off: T < F: fast recovery;  T > F: hyper;  T = F: additive
//     fast recovery: Rc = (Rt + Rc) / 2;  additive: Rt += R_AI;  hyper: Rt += R_HAI; then for
//     both Rt = min(Rt, line) and Rc = (Rt + Rc) / 2 (F = rpg_threshold, R_AI = rpg_ai_rate,
//     R_HAI = rpg_hai_rate). Rc within 0.1% of line rate snaps to it; the increase clocks stop
//     at line rate until the next CNP.
//   clamping (at a cut): Rt = Rc if clamp_target, or BC > 0, or (clamp_after_time_inc and
//     T > 0); otherwise the target is kept (consecutive cuts without an increase between them
//     keep the target; firmware clamp_tgt_rate = 0, clamp_tgt_rate_after_time_inc = 1).
//
// Sources: the rules are the paper's (Sec. 3.1-3.2, Algorithm 1) with the timing and clamping
// of the firmware parameters (NVIDIA "DCQCN Parameters", ConnectX-4 and later; DOCA "DCQCN CC
// Parameters"), the stage rule of the ns-3 RDMA model of HPCC (SIGCOMM'19, rdma-hw.cc,
// Mellanox DCQCN) when the byte counter is off, and of Google's isekai DCQCN model when on.
// Profiles: see dcqcn_profile(); DcqcnParams{} holds the connectx (firmware) values, scenarios
// default to hpcc-ns3-paper (network.dcqcn.profile). Alpha is evaluated lazily: an update at
// every period boundary, computed in closed form when the flow next needs it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "sim/units.h"

namespace ct::network {

struct DcqcnParams {
  double g = 5.0 / 1024.0;                                  // dce_tcp_g = 1019
  sim::Duration alpha_period = sim::Duration::us(1);        // dce_tcp_rtt
  double initial_alpha = 1023.0 / 1024.0;                   // initial_alpha_value
  sim::Duration rate_reduce_period = sim::Duration::us(4);  // rate_reduce_monitor_period
  double min_dec_factor = 0.5;                              // rpg_min_dec_fac = 50 %
  double min_rate_bps = 1e6;                                // rpg_min_rate = 1 Mb/s
  bool clamp_target = false;                                // clamp_tgt_rate
  bool clamp_after_time_inc = true;                         // clamp_tgt_rate_after_time_inc
  sim::Duration increase_period = sim::Duration::us(300);   // rpg_time_reset
  int64_t byte_counter = int64_t{32767} * 64;               // rpg_byte_reset (64 B units)
  int fast_recovery_steps = 1;                              // rpg_threshold
  double rai_bps = 5e6;                                     // rpg_ai_rate
  double rhai_bps = 50e6;                                   // rpg_hai_rate
  sim::Duration cnp_interval = sim::Duration::us(4);        // min_time_between_cnps (NP)
};

// Named parameter sets: "connectx" (NVIDIA firmware defaults, above), "sigcomm15" (the paper:
// g = 1/256, 55 us alpha and increase timers, 10 MB byte counter, F = 5, R_AI = 40 Mb/s,
// R_HAI = 200 Mb/s (5 R_AI), CNP at most every 50 us, a cut per CNP), "hpcc-ns3" (HPCC's ns-3
// run.py "dcqcn": alpha every 1 us with g = 1/256, a cut check every 4 us, increase timer
// 300 us, F = 1, R_AI = 5 Mb/s and R_HAI = 50 Mb/s per 25 Gb/s of line rate, minimum rate
// 1 Gb/s, no byte counter, a CNP per marked packet), "hpcc-ns3-paper" (the same run.py's
// "dcqcn_paper": hpcc-ns3 with alpha updated and a cut checked every 50 us and an increase
// timer of 55 us, the paper's timers). Throws std::invalid_argument for another name.
DcqcnParams dcqcn_profile(const std::string& name, double line_rate_bps);

class Dcqcn {
 public:
  void reset(double line_rate_bps) {
    line_ = rc_ = rt_ = line_rate_bps;
    alpha_ = 1.0;
    started_ = false;
    t0_ = 0;
    period_ = 0;
    cnp_in_period_ = false;
    pending_cut_ = false;
    t_ = bc_ = 0;
    bytes_ = 0;
  }

  // A CNP arrived at now_ps: it counts for the alpha period in progress and makes the next
  // grid point of the decrease clock cut the rate (the first CNP starts the clocks at t0).
  void on_cnp(int64_t now_ps, const DcqcnParams& p) {
    if (!started_) {
      started_ = true;
      t0_ = now_ps;
      period_ = 0;
      alpha_ = p.initial_alpha;
      cnp_in_period_ = false;
    } else {
      advance_alpha(now_ps, p);
      cnp_in_period_ = true;
    }
    pending_cut_ = true;
  }

  // The next grid point of the decrease clock strictly after now_ps (when a cut is pending).
  [[nodiscard]] int64_t next_cut_ps(int64_t now_ps, const DcqcnParams& p) const {
    const int64_t period = std::max<int64_t>(1, p.rate_reduce_period.count_ps());
    const int64_t k = (now_ps - t0_) / period + 1;
    return t0_ + k * period;
  }

  // The decrease clock ticked at now_ps. Returns true when it cut the rate (the caller then
  // restarts the increase timer and the byte count).
  bool on_cut_check(int64_t now_ps, const DcqcnParams& p) {
    if (!pending_cut_) return false;
    advance_alpha(now_ps, p);
    pending_cut_ = false;
    if (p.clamp_target || bc_ > 0 || (p.clamp_after_time_inc && t_ > 0)) rt_ = rc_;
    const double factor = std::max(1.0 - alpha_ / 2.0, p.min_dec_factor);
    rc_ = std::max(std::min(p.min_rate_bps, line_), rc_ * factor);
    t_ = bc_ = 0;
    bytes_ = 0;
    return true;
  }

  // The increase timer fired; returns true while it should keep running.
  bool on_timer(const DcqcnParams& p) {
    increase(p, t_);
    ++t_;
    return !at_line_rate();
  }

  // `bytes` were sent; returns true when the byte counter produced an increase event.
  bool on_bytes(int64_t bytes, const DcqcnParams& p) {
    if (at_line_rate() || p.byte_counter <= 0 || !started_) return false;
    bytes_ += bytes;
    if (bytes_ < p.byte_counter) return false;
    bytes_ -= p.byte_counter;
    increase(p, bc_);
    ++bc_;
    return true;
  }

  [[nodiscard]] double rate() const { return rc_; }
  [[nodiscard]] double target() const { return rt_; }
  // Alpha as of now_ps (the updates of the periods ended by then applied).
  [[nodiscard]] double alpha_at(int64_t now_ps, const DcqcnParams& p) const {
    Dcqcn copy = *this;
    copy.advance_alpha(now_ps, p);
    return copy.alpha_;
  }
  [[nodiscard]] bool at_line_rate() const { return rc_ >= line_; }
  [[nodiscard]] int timer_stage() const { return t_; }

 private:
  // Applies the alpha updates of every period that ended by now_ps.
  void advance_alpha(int64_t now_ps, const DcqcnParams& p) {
    if (!started_) return;
    const int64_t period = std::max<int64_t>(1, p.alpha_period.count_ps());
    const int64_t k = (now_ps - t0_) / period;
    if (k <= period_) return;
    alpha_ = (1.0 - p.g) * alpha_ + (cnp_in_period_ ? p.g : 0.0);  // the period with the flag
    const int64_t idle = k - period_ - 1;
    if (idle > 0) alpha_ *= std::pow(1.0 - p.g, static_cast<double>(idle));
    period_ = k;
    cnp_in_period_ = false;
  }

  // One increase event; `own` is the counter of the clock that fired, before its bump.
  void increase(const DcqcnParams& p, int own) {
    const int f = p.fast_recovery_steps;
    int lo = own;
    int hi = own;
    if (p.byte_counter > 0) {
      lo = std::min(t_, bc_);
      hi = std::max(t_, bc_);
    }
    if (hi < f) {
      // fast recovery: target unchanged
    } else if (lo > f) {
      rt_ += p.rhai_bps;
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
  bool started_ = false;
  int64_t t0_ = 0;
  int64_t period_ = 0;  // index of the alpha period in progress
  bool cnp_in_period_ = false;
  bool pending_cut_ = false;
  int t_ = 0;
  int bc_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace ct::network

// Expected goodput of periodic checkpointing under exponential failures, and the interval
// that maximises it.
//
// Model (renewal-reward; Daly 2006 Sec. 3 with failures also striking during recovery):
// failures form a Poisson process of rate lambda = 1/M at all times. The job alternates
// segments of tau seconds of work followed by a synchronous checkpoint of d seconds; the
// segment counts only if tau + d pass without a failure. A failure loses everything since
// the last completed checkpoint and starts a recovery of R seconds (detection + restart +
// restore); a failure during recovery starts the recovery again. Hot spares are unlimited
// (no repair waits). With s = tau + d, the expected wall time to complete one segment is
//   E[X] = E[min(F, s)] + P(F < s) (E[recovery] + E[X]),
//   E[min(F, s)] = (1 - e^{-lambda s}) / lambda,  E[recovery] = (e^{lambda R} - 1) / lambda
//   =>  E[X] = e^{lambda R} (e^{lambda (tau + d)} - 1) / lambda
// and the long-run fraction of wall time doing useful training is
//   G(tau) = tau / E[X] = lambda tau e^{-lambda R} / expm1(lambda (tau + d)).
// No failures (M infinite): G = tau / (tau + d).
// The optimum solves (1 - x) e^{x + lambda d} = 1 with x = lambda tau, so 0 < tau* < M;
// it does not depend on R. optimal_interval_s finds it by golden-section search on log tau
// over [1e-12 M, M] (G is unimodal there), to a relative tolerance of 1e-10.
// For asynchronous saves, pass the blocking snapshot as d; the flush window during which
// the newest checkpoint is not yet durable is not in this closed form (campaign.h has it).
#pragma once

namespace ct::reliability {

// Throws std::invalid_argument naming the key: interval <= 0
// (training_job.checkpoint.interval), save < 0 (training_job.checkpoint), recovery < 0
// (recovery.restart), mtbf <= 0 (failures.node_failure_rate_per_day).
double expected_goodput(double interval_s, double save_s, double recovery_s, double mtbf_s);

// The tau maximising expected_goodput; +infinity when mtbf is infinite.
double optimal_interval_s(double save_s, double mtbf_s);

}  // namespace ct::reliability

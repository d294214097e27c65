// Closed-form checkpoint intervals (time of useful work between two checkpoints).
//
//   Young (1974):  tau = sqrt(2 d M)
//   Daly (2006), higher order:
//                  tau = sqrt(2 d M) [1 + (1/3) sqrt(d / (2M)) + d / (18 M)] - d   for d < 2M
//                  tau = M                                                       for d >= 2M
// d = checkpoint save cost (the blocking part, seconds), M = the job's MTBF (seconds,
// failure_model.h). Both are +infinity when M is infinite (no failures: never checkpoint
// for reliability's sake).
#pragma once

namespace ct::reliability {

// Throw std::invalid_argument naming the key for d <= 0 (training_job.checkpoint: save
// cost) or M <= 0 (failures.*_rate_per_day).
double young_interval_s(double save_s, double mtbf_s);
double daly_interval_s(double save_s, double mtbf_s);

}  // namespace ct::reliability

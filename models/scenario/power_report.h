// Power and cooling figures of a training step: IT power over the step (hardware/power.h,
// from the replay's busy-GPU series), facility power = IT x PUE, per-rack power against the
// rack limit, and the power the cluster draws while the job is stopped (checkpoint stalls,
// detection, restarts: every GPU at its idle draw), so that the swing the grid sees when a
// 10,000-GPU job stops or restarts is explicit.
//   rack peak  = nodes_per_rack x g x TDP x (1 + host_per_gpu)   (every GPU at TDP: the
//                provisioning case; racks are identical, so all or none exceed the limit)
//   rack mean  = nodes_per_rack x (step mean - switch power) / nodes
//   idle       = cluster_power_w(busy = 0)
//   stop swing = step mean - idle
#pragma once

#include <nlohmann/json.hpp>

#include "models/replay/step_model.h"
#include "models/scenario/config.h"

namespace ct::scenario {

// The power figures later stages use (the campaign's power and timeline).
struct StepPower {
  double cluster_mean_w = 0.0;  // IT power over the step
  double idle_w = 0.0;          // every GPU idle (the job stopped)
  double pue = 1.0;
};

StepPower step_power(const Config& config, const replay::StepResult& step);

// report["power"] for a simulated step.
nlohmann::json power_report(const Config& config, const replay::StepResult& step);

// Mean IT power over a campaign: training (useful and redone work) at the step's mean power,
// every other second (checkpoint stalls, detection, waits, health checks, restarts) at the
// idle power. Adds campaign_mean_w, facility_campaign_mean_w and campaign_energy_mwh
// (facility) to `power` (report["power"]).
void add_campaign_power(double training_s, double duration_s, const StepPower& step, nlohmann::json& power);

}  // namespace ct::scenario

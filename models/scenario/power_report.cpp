#include "models/scenario/power_report.h"

#include <cmath>

#include "models/hardware/power.h"
#include "models/scenario/model_configs.h"
#include "models/topology/topology.h"

namespace ct::scenario {

StepPower step_power(const Config& c, const replay::StepResult& r) {
  const hardware::PowerModel model = power_model(c);
  const double gpus = static_cast<double>(c.cluster_gpus());
  const double switches = topology::switch_count(fabric_config(c));
  return {r.power_mean_w, hardware::cluster_power_w(gpu_spec(c), model, gpus, 0.0, switches),
          c.cluster.power.pue};
}

nlohmann::json power_report(const Config& c, const replay::StepResult& r) {
  const hardware::PowerModel model = power_model(c);
  const hardware::GpuSpec gpu = gpu_spec(c);
  const double switches = topology::switch_count(fabric_config(c));
  const StepPower sp = step_power(c, r);
  const double idle_w = sp.idle_w;
  const double pue = sp.pue;
  const int per_rack = c.cluster.power.nodes_per_rack;
  const int racks = (c.cluster.nodes + per_rack - 1) / per_rack;
  const double node_peak_w =
      c.cluster.gpus_per_node * (hardware::power_limit(gpu) + gpu.tdp_watts * model.host_per_gpu_fraction);
  const double rack_peak_w = per_rack * node_peak_w;
  const double rack_mean_w = per_rack * (r.power_mean_w - switches * model.switch_watts) / c.cluster.nodes;
  const double limit_w = c.cluster.power.rack_limit.watts;
  return {{"cluster_peak_w", r.power_peak_w},
          {"cluster_mean_w", r.power_mean_w},
          {"cluster_min_w", r.power_min_w},
          {"swing_w", r.power_peak_w - r.power_min_w},
          {"resolution_s", r.power_bucket_s},
          {"idle_w", idle_w},
          {"checkpoint_w", idle_w},
          {"restart_w", idle_w},
          {"stop_swing_w", r.power_mean_w - idle_w},
          {"pue", pue},
          {"facility_peak_w", r.power_peak_w * pue},
          {"facility_mean_w", r.power_mean_w * pue},
          {"racks", racks},
          {"rack_peak_w", rack_peak_w},
          {"rack_mean_w", rack_mean_w},
          {"rack_limit_w", limit_w},
          {"racks_over_limit", rack_peak_w > limit_w ? racks : 0}};
}

void add_campaign_power(double training_s, double duration_s, const StepPower& step, nlohmann::json& p) {
  if (!(duration_s > 0)) return;
  const double campaign_w =
      (training_s * step.cluster_mean_w + (duration_s - training_s) * step.idle_w) / duration_s;
  p["campaign_mean_w"] = campaign_w;
  p["facility_campaign_mean_w"] = campaign_w * step.pue;
  p["campaign_energy_mwh"] = campaign_w * step.pue * duration_s / 3.6e9;
}

}  // namespace ct::scenario

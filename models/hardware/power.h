// Power of GPUs, nodes and switches from how busy the GPUs are.
//
//   GPU:    P = P_idle + (P_lim - P_idle) u,  P_idle = idle_fraction x TDP, P_lim = the power
//           limit (TDP unless GpuSpec::power_limit_watts lowers it), u = share of time the
//           GPU runs compute kernels (communication-only and idle periods draw P_idle:
//           HBM, NVLink and NCCL kernels keep the GPU above its deep idle).
//   Node:   its GPUs + a host share (CPUs, memory, NICs, fans) = host_per_gpu_fraction x TDP
//           per GPU: a DGX H100 is rated 10.2 kW for 8 x 700 W GPUs.
//   Switch: a constant switch_watts (a 51.2 Tb/s, 128 x 400G switch is rated about 1.5 kW).
// Facility overhead (PUE) is outside: these are IT watts.
#pragma once

#include "models/hardware/gpu_catalog.h"

namespace ct::hardware {

struct PowerModel {
  double idle_fraction = 0.15;
  double host_per_gpu_fraction = 0.5;
  double switch_watts = 1500.0;
};

// IT power of `gpus` GPUs of which an average `busy_gpus` run compute, plus their hosts and
// `switches` switches.
inline double cluster_power_w(const GpuSpec& gpu, const PowerModel& m, double gpus, double busy_gpus,
                              double switches) {
  const double idle = m.idle_fraction * gpu.tdp_watts;
  return gpus * (idle + m.host_per_gpu_fraction * gpu.tdp_watts) + busy_gpus * (power_limit(gpu) - idle) +
         switches * m.switch_watts;
}

}  // namespace ct::hardware

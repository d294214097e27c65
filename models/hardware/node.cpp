#include "models/hardware/node.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ct::hardware {
namespace {

void require_rate(ct::sim::Bandwidth rate, const char* field) {
  if (!std::isfinite(rate.bps()) || rate.bps() <= 0.0) {
    throw std::invalid_argument(std::string("NodeSpec: ") + field + " must be a finite positive rate, got " +
                                std::to_string(rate.bps()) + " bit/s");
  }
}

}  // namespace

void NodeSpec::validate() const {
  ct::hardware::validate(gpu);
  if (gpus_per_node <= 0) {
    throw std::invalid_argument("NodeSpec: gpus_per_node must be positive, got " +
                                std::to_string(gpus_per_node));
  }
  if (nics_per_node <= 0) {
    throw std::invalid_argument("NodeSpec: nics_per_node must be positive, got " +
                                std::to_string(nics_per_node));
  }
  if (nics_per_node > gpus_per_node || gpus_per_node % nics_per_node != 0) {
    throw std::invalid_argument("NodeSpec: nics_per_node (" + std::to_string(nics_per_node) +
                                ") must divide or equal gpus_per_node (" + std::to_string(gpus_per_node) +
                                ")");
  }
  if (nvlink_domain < 0 || nvlink_domain % gpus_per_node != 0) {
    throw std::invalid_argument("NodeSpec: nvlink_domain (" + std::to_string(nvlink_domain) +
                                ") must be 0 (the node) or a multiple of gpus_per_node (" +
                                std::to_string(gpus_per_node) + ")");
  }
  require_rate(nic_rate, "nic_rate");
  require_rate(nvlink_rate, "nvlink_rate");
  require_rate(pcie_rate, "pcie_rate");
  if (nvlink_latency < ct::sim::Duration::zero()) {
    throw std::invalid_argument("NodeSpec: nvlink_latency must not be negative");
  }
}

}  // namespace ct::hardware

#include "models/scenario/machine_memory.h"

#include <fstream>
#include <string>

namespace ct::scenario {

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return 0.0;
}

}  // namespace ct::scenario

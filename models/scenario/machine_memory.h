// What this machine can hold: MemAvailable from /proc/meminfo, in bytes (0 when unknown).
// Runs that would not fit fail fast against it with their estimate.
#pragma once

namespace ct::scenario {

double available_memory_bytes();

}  // namespace ct::scenario

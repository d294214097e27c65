// Internal: the fixed hash of ECMP next-hop selection. splitmix64 (Steele, Lea, Flood 2014):
//   z += 0x9e3779b97f4a7c15; z = (z ^ z>>30) * 0xbf58476d1ce4e5b9;
//   z = (z ^ z>>27) * 0x94d049bb133111eb; return z ^ z>>31.
// A flow's key is mixed once from (src, dst, flow id); each switch mixes in its own id, so a
// switch's choice is a deterministic function of the flow and the switch, the same on every
// platform and run (never std::hash).
#pragma once

#include <cstdint>

namespace ct::topology::detail {

constexpr uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t flow_key(uint64_t src, uint64_t dst, uint64_t flow_id) {
  return splitmix64(splitmix64(splitmix64(src) ^ dst) ^ flow_id);
}

constexpr uint64_t hop_hash(uint64_t key, uint64_t switch_id) {
  return splitmix64(key ^ (switch_id * 0xd6e8feb86659fd93ULL));
}

}  // namespace ct::topology::detail

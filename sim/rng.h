// Deterministic random streams keyed by (seed, stream id).
//
// Each component asks the Simulation for its own stream, so the numbers it draws do not
// depend on how events of other components interleave, nor on the thread count. The
// stream state is xoshiro256** seeded by four splitmix64 outputs of
// splitmix64(seed) ^ splitmix64(stream). Distributions are written out here (not
// <random>'s, whose algorithms differ between standard libraries) so that a scenario
// gives identical numbers on every platform:
//   uniform01      = (x >> 11) * 2^-53
//   below(n)       = Lemire's multiply-shift with rejection (unbiased)
//   exponential(m) = -m * log(1 - U)   (1 - U is exact and in (0, 1])
//   normal()       = Box-Muller, cosine branch only (stateless)
//   weibull(k, l)  = l * (-log(1 - U))^(1/k)
#pragma once

#include <cmath>
#include <cstdint>

namespace ct::sim {

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t x = splitmix64(seed) ^ splitmix64(stream ^ 0x5851f42d4c957f2dULL);
    for (auto& s : s_) {
      x = splitmix64(x);
      s = x;
    }
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  uint64_t below(uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    u128 m = static_cast<u128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<u128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  double exponential(double mean) { return -mean * std::log(1.0 - uniform01()); }

  double normal(double mean, double stddev) {
    const double u1 = 1.0 - uniform01();
    const double u2 = uniform01();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  double weibull(double shape, double scale) {
    return scale * std::pow(-std::log1p(-uniform01()), 1.0 / shape);
  }

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4]{};
};

}  // namespace ct::sim

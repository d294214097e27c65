#include "sim/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace ct::sim {
namespace {

struct UnitScale {
  std::string_view unit;
  double scale;  // multiplier to the base unit (ps, byte, bit/s, W)
};

constexpr std::array kDurationUnits{
    UnitScale{"ps", 1.0}, UnitScale{"ns", 1e3},    UnitScale{"us", 1e6},    UnitScale{"ms", 1e9},
    UnitScale{"s", 1e12}, UnitScale{"min", 60e12}, UnitScale{"h", 3600e12}, UnitScale{"d", 86400e12},
};

constexpr std::array kByteUnits{
    UnitScale{"B", 1.0},         UnitScale{"KB", 1e3},           UnitScale{"MB", 1e6},
    UnitScale{"GB", 1e9},        UnitScale{"TB", 1e12},          UnitScale{"KiB", 1024.0},
    UnitScale{"MiB", 1048576.0}, UnitScale{"GiB", 1073741824.0}, UnitScale{"TiB", 1099511627776.0},
};

constexpr std::array kRateUnits{
    UnitScale{"bps", 1.0},
    UnitScale{"Kbps", 1e3},
    UnitScale{"Mbps", 1e6},
    UnitScale{"Gbps", 1e9},
    UnitScale{"Tbps", 1e12},
    UnitScale{"b/s", 1.0},
    UnitScale{"Kb/s", 1e3},
    UnitScale{"Mb/s", 1e6},
    UnitScale{"Gb/s", 1e9},
    UnitScale{"Tb/s", 1e12},
    UnitScale{"B/s", 8.0},
    UnitScale{"KB/s", 8e3},
    UnitScale{"MB/s", 8e6},
    UnitScale{"GB/s", 8e9},
    UnitScale{"TB/s", 8e12},
    UnitScale{"KiB/s", 8.0 * 1024},
    UnitScale{"MiB/s", 8.0 * 1048576},
    UnitScale{"GiB/s", 8.0 * 1073741824},
    UnitScale{"GBps", 8e9},
    UnitScale{"MBps", 8e6},
};

constexpr std::array kPowerUnits{
    UnitScale{"W", 1.0},
    UnitScale{"kW", 1e3},
    UnitScale{"MW", 1e6},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <size_t N>
double parse_scaled(std::string_view text, const std::array<UnitScale, N>& units, const char* what,
                    const char* example) {
  const std::string_view s = trim(text);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  auto fail = [&](const std::string& why) -> double {
    throw UnitError("'" + std::string(text) + "' is not a " + what + " (" + why +
                    "); expected a number with a unit, like '" + example + "'");
  };
  if (ec != std::errc() || end == s.data()) return fail("no leading number");
  if (!std::isfinite(value)) return fail("not finite");
  if (value < 0) return fail("negative");
  const std::string_view unit = trim(std::string_view(end, static_cast<size_t>(s.data() + s.size() - end)));
  if (unit.empty()) return fail("missing unit");
  for (const auto& u : units) {
    if (u.unit == unit) return value * u.scale;
  }
  std::string known;
  for (const auto& u : units) known += (known.empty() ? "" : " ") + std::string(u.unit);
  return fail("unknown unit '" + std::string(unit) + "', known: " + known);
}

int64_t to_int64_checked(double v, std::string_view text, const char* what) {
  if (v >= 9.2e18) {
    throw UnitError("'" + std::string(text) + "' is too large for a " + what);
  }
  return static_cast<int64_t>(std::llround(v));
}

}  // namespace

Duration Duration::from_seconds(double seconds) {
  const double ps = seconds * 1e12;
  if (ps >= 9.2e18) return max();
  return Duration(static_cast<int64_t>(ps >= 0 ? ps + 0.5 : ps - 0.5));
}

Duration Bandwidth::transfer_time(Bytes b) const {
  if (b.n <= 0) return Duration::zero();
  const double ps = std::ceil(static_cast<double>(b.n) * 8e12 / bps_);
  if (!(ps < 9.2e18)) return Duration::max();
  return Duration::ps(static_cast<int64_t>(ps));
}

Duration parse_duration(std::string_view text) {
  return Duration::ps(
      to_int64_checked(parse_scaled(text, kDurationUnits, "duration", "1.5us"), text, "duration"));
}

double parse_duration_seconds(std::string_view text) {
  return parse_scaled(text, kDurationUnits, "duration", "30d") * 1e-12;
}

Bytes parse_bytes(std::string_view text) {
  return Bytes{to_int64_checked(parse_scaled(text, kByteUnits, "byte size", "64MiB"), text, "byte size")};
}

Bandwidth parse_rate(std::string_view text) {
  return Bandwidth::bits_per_s(parse_scaled(text, kRateUnits, "rate", "400Gbps"));
}

Power parse_power(std::string_view text) { return Power{parse_scaled(text, kPowerUnits, "power", "700W")}; }

std::string format_duration(Duration d) {
  char buf[64];
  const double s = d.seconds();
  if (s >= 1.0)
    std::snprintf(buf, sizeof buf, "%.6gs", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.6gms", s * 1e3);
  else if (s >= 1e-6)
    std::snprintf(buf, sizeof buf, "%.6gus", s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.6gns", s * 1e9);
  return buf;
}

std::string format_bytes(Bytes b) {
  char buf[64];
  const double v = b.as_double();
  if (v >= 1073741824.0)
    std::snprintf(buf, sizeof buf, "%.6gGiB", v / 1073741824.0);
  else if (v >= 1048576.0)
    std::snprintf(buf, sizeof buf, "%.6gMiB", v / 1048576.0);
  else if (v >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.6gKiB", v / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(b.n));
  return buf;
}

}  // namespace ct::sim

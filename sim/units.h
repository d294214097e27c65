// Strong types for the quantities a scenario uses, and their parsing from unit strings.
//
// Time is an integer count of picoseconds (int64: about 106 days). Bytes are an integer
// count. Rates are bits per second in a double (capacities such as 400 Gb/s / 1.2 are not
// integers). Serialization time of b bytes at r bit/s is ceil(8e12 * b / r) ps, computed
// once per transfer, never from a truncated ps-per-byte constant.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ct::sim {

// Thrown for a malformed or unit-less quantity; the message says what was expected.
class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration ps(int64_t v) { return Duration(v); }
  static constexpr Duration ns(int64_t v) { return Duration(v * 1000); }
  static constexpr Duration us(int64_t v) { return Duration(v * 1000000); }
  static constexpr Duration ms(int64_t v) { return Duration(v * 1000000000); }
  static constexpr Duration s(int64_t v) { return Duration(v * 1000000000000); }
  // Rounds to the nearest picosecond; saturates at max().
  static Duration from_seconds(double seconds);
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration max() { return Duration(std::numeric_limits<int64_t>::max()); }

  [[nodiscard]] constexpr int64_t count_ps() const { return ps_; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Duration operator+(Duration o) const { return Duration(ps_ + o.ps_); }
  constexpr Duration operator-(Duration o) const { return Duration(ps_ - o.ps_); }
  constexpr Duration operator*(int64_t k) const { return Duration(ps_ * k); }
  constexpr Duration operator/(int64_t k) const { return Duration(ps_ / k); }
  constexpr Duration& operator+=(Duration o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Duration& operator-=(Duration o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  [[nodiscard]] constexpr int64_t ps() const { return ps_; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Time operator+(Duration d) const { return Time(ps_ + d.count_ps()); }
  constexpr Time operator-(Duration d) const { return Time(ps_ - d.count_ps()); }
  constexpr Duration operator-(Time o) const { return Duration::ps(ps_ - o.ps_); }
  constexpr Time& operator+=(Duration d) {
    ps_ += d.count_ps();
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

struct Bytes {
  int64_t n = 0;
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return {n + o.n}; }
  constexpr Bytes operator-(Bytes o) const { return {n - o.n}; }
  [[nodiscard]] constexpr double as_double() const { return static_cast<double>(n); }
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bits_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v * 8.0); }
  static constexpr Bandwidth gbps(double v) { return Bandwidth(v * 1e9); }

  [[nodiscard]] constexpr double bps() const { return bps_; }
  [[nodiscard]] constexpr double bytes_per_second() const { return bps_ / 8.0; }
  [[nodiscard]] constexpr double gbps_value() const { return bps_ * 1e-9; }
  // ceil(8e12 * bytes / bps) picoseconds.
  [[nodiscard]] Duration transfer_time(Bytes b) const;
  constexpr Bandwidth operator*(double k) const { return Bandwidth(bps_ * k); }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(double bps) : bps_(bps) {}
  double bps_ = 0.0;
};

struct Power {
  double watts = 0.0;
  constexpr auto operator<=>(const Power&) const = default;
};

namespace literals {
constexpr Duration operator""_ps(unsigned long long v) { return Duration::ps(static_cast<int64_t>(v)); }
constexpr Duration operator""_ns(unsigned long long v) { return Duration::ns(static_cast<int64_t>(v)); }
constexpr Duration operator""_us(unsigned long long v) { return Duration::us(static_cast<int64_t>(v)); }
constexpr Duration operator""_ms(unsigned long long v) { return Duration::ms(static_cast<int64_t>(v)); }
constexpr Duration operator""_s(unsigned long long v) { return Duration::s(static_cast<int64_t>(v)); }
constexpr Bytes operator""_B(unsigned long long v) { return Bytes{static_cast<int64_t>(v)}; }
constexpr Bytes operator""_KiB(unsigned long long v) { return Bytes{static_cast<int64_t>(v) << 10}; }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes{static_cast<int64_t>(v) << 20}; }
constexpr Bytes operator""_GiB(unsigned long long v) { return Bytes{static_cast<int64_t>(v) << 30}; }
constexpr Bandwidth operator""_Gbps(unsigned long long v) { return Bandwidth::gbps(static_cast<double>(v)); }
}  // namespace literals

// Parsers accept a decimal number followed by a unit, with optional space:
//   durations  ps ns us ms s min h d        ("1.5us", "1800s", "2h")
//   bytes      B KB MB GB TB (10^3) KiB MiB GiB TiB (2^10)   ("64MiB", "100KB")
//   rates      bps Kbps Mbps Gbps Tbps (also Gb/s), B/s KB/s MB/s GB/s TB/s, GiB/s ...
//   power      W kW MW
// A bare number, an unknown unit, a negative value or an overflow throws UnitError.
Duration parse_duration(std::string_view text);
// The same units, as double seconds: spans longer than Duration holds (about 106 days).
double parse_duration_seconds(std::string_view text);
Bytes parse_bytes(std::string_view text);
Bandwidth parse_rate(std::string_view text);
Power parse_power(std::string_view text);

std::string format_duration(Duration d);
std::string format_bytes(Bytes b);

}  // namespace ct::sim

// Statistics that cost one branch when nobody listens.
//
// Counter: a sum. TimeWeighted: integral of a piecewise-constant value over time,
//   mean = (sum of v_i * dt_i) / (t_end - t_start), also the maximum.
// Histogram: log-spaced buckets, `per_octave` per doubling above `min`, so relative
//   resolution is 2^(1/per_octave) - 1; quantiles are read at bucket geometric midpoints.
// TimeSeries: at most `capacity` points; when full, adjacent pairs are merged (mean of
//   values, first time) and the sampling stride doubles, so memory stays bounded on
//   arbitrarily long runs while the series still covers the whole run.
// Each probe has `enabled`; a disabled probe's record() is a single predictable branch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/units.h"

namespace ct::sim {

class Counter {
 public:
  bool enabled = true;
  void add(double v = 1.0) {
    if (enabled) value_ += v;
  }
  [[nodiscard]] double value() const { return value_; }

 private:
  double value_ = 0.0;
};

class TimeWeighted {
 public:
  bool enabled = true;
  void set(Time now, double value) {
    if (!enabled) return;
    if (!started_) {
      start_ = now;
      started_ = true;
    } else {
      integral_ += value_ * (now - last_).seconds();
    }
    last_ = now;
    value_ = value;
    if (value > max_) max_ = value;
  }
  [[nodiscard]] double mean(Time now) const {
    if (!started_ || now <= start_) return value_;
    return (integral_ + value_ * (now - last_).seconds()) / (now - start_).seconds();
  }
  [[nodiscard]] double max() const { return max_; }
  [[nodiscard]] double current() const { return value_; }

 private:
  Time start_, last_;
  double value_ = 0.0, integral_ = 0.0, max_ = 0.0;
  bool started_ = false;
};

// Quantiles of a sample, the two definitions the reports use (q in [0, 1]):
//   nearest_rank: the element at rank round(q (n - 1)) of the sorted sample (0 when empty);
//   interpolated: linear between the two ranks around q (n - 1) of an already sorted sample.
[[nodiscard]] inline double nearest_rank_quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

[[nodiscard]] inline double interpolated_quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

class Histogram {
 public:
  bool enabled = true;
  explicit Histogram(double min = 1e-9, int per_octave = 8, int octaves = 64)
      : min_(min), per_octave_(per_octave), buckets_(static_cast<size_t>(per_octave * octaves) + 1) {}
  void record(double v) {
    if (!enabled) return;
    ++count_;
    sum_ += v;
    buckets_[index(v)] += 1;
  }
  [[nodiscard]] uint64_t count() const { return count_; }
  [[nodiscard]] double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  // q in [0,1]; 0 for an empty histogram.
  [[nodiscard]] double quantile(double q) const {
    if (count_ == 0) return 0.0;
    const auto target = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= target && buckets_[i] > 0) {
        if (i == 0) return min_;
        return min_ * std::exp2((static_cast<double>(i) - 0.5) / per_octave_);
      }
    }
    return min_ * std::exp2(static_cast<double>(buckets_.size()) / per_octave_);
  }

 private:
  size_t index(double v) const {
    if (!(v > min_)) return 0;
    const double i = std::ceil(std::log2(v / min_) * per_octave_);
    return i >= static_cast<double>(buckets_.size() - 1) ? buckets_.size() - 1 : static_cast<size_t>(i);
  }
  double min_;
  int per_octave_;
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

class TimeSeries {
 public:
  bool enabled = true;
  explicit TimeSeries(size_t capacity = 4096) : capacity_(capacity < 2 ? 2 : capacity) {}
  void record(Time t, double v) {
    if (!enabled) return;
    if (++pending_ < stride_) {
      acc_ += v;
      return;
    }
    const double value = (acc_ + v) / static_cast<double>(stride_);
    acc_ = 0.0;
    pending_ = 0;
    times_.push_back(t.seconds());
    values_.push_back(value);
    if (times_.size() >= capacity_) compact();
  }
  [[nodiscard]] const std::vector<double>& times_s() const { return times_; }
  [[nodiscard]] const std::vector<double>& values() const { return values_; }

 private:
  void compact() {
    size_t k = 0;
    for (size_t i = 0; i + 1 < times_.size(); i += 2, ++k) {
      times_[k] = times_[i];
      values_[k] = 0.5 * (values_[i] + values_[i + 1]);
    }
    times_.resize(k);
    values_.resize(k);
    stride_ *= 2;
  }
  size_t capacity_;
  uint64_t stride_ = 1, pending_ = 0;
  double acc_ = 0.0;
  std::vector<double> times_, values_;
};

}  // namespace ct::sim

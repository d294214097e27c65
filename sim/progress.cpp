#include "sim/progress.h"

#include <chrono>
#include <cstdio>
#include <mutex>

namespace ct::sim::progress {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mutex;
  Clock::time_point start;
  Clock::time_point next;
  double expected = 0;
  double every_s = 5;
  std::atomic<uint64_t> events{0};
  bool printed = false;
};

State& state() {
  static State s;
  return s;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void print_line(State& s, bool last) {
  const double done = static_cast<double>(s.events.load());
  const double elapsed = seconds_since(s.start);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  if (last) {
    std::fprintf(stderr, "progress: done, %.3g events in %.0f s (%.3g events/s)\n", done, elapsed, rate);
  } else if (s.expected > 0 && done < s.expected && rate > 0) {
    std::fprintf(stderr, "progress: %.3g of about %.3g events (%.0f%%), %.3g events/s, about %.0f s left\n",
                 done, s.expected, 100.0 * done / s.expected, rate, (s.expected - done) / rate);
  } else {
    std::fprintf(stderr, "progress: %.3g events in %.0f s, %.3g events/s\n", done, elapsed, rate);
  }
  std::fflush(stderr);
}

}  // namespace

void detail::tick() { add(kTickEvents); }

void detail::extend(double n) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.expected > 0) s.expected += n;
}

void detail::add(uint64_t n) {
  State& s = state();
  s.events.fetch_add(n, std::memory_order_relaxed);
  if (Clock::now() < s.next) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (Clock::now() < s.next) return;
  print_line(s, false);
  s.printed = true;
  s.next =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.every_s));
}

void start(double expected_events, double quiet_s, double every_s) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.start = Clock::now();
  s.next = s.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(quiet_s));
  s.expected = expected_events;
  s.every_s = every_s;
  s.events = 0;
  s.printed = false;
  detail::enabled = true;
}

void stop() {
  State& s = state();
  detail::enabled = false;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.printed) print_line(s, true);
  s.printed = false;
}

}  // namespace ct::sim::progress

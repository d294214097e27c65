// Progress of a long run on stderr: events done of the estimated total, events per second and
// the time left, a line every few seconds once the run has lasted a few seconds. Off unless a
// front end (the CLI, ct.run(progress=True)) turns it on; it never changes what is simulated.
// Every Simulation reports its events here in blocks of kTickEvents (one relaxed atomic load
// per block when off).
#pragma once

#include <atomic>
#include <cstdint>

namespace ct::sim::progress {

inline constexpr uint64_t kTickEvents = uint64_t{1} << 16;

namespace detail {
inline std::atomic<bool> enabled{false};
void tick();
void add(uint64_t n);
void extend(double n);
}  // namespace detail

// Starts reporting for one run: `expected_events` from the cost estimate (0: unknown, then no
// percentage or time left), the first line after `quiet_s` seconds, then every `every_s`.
void start(double expected_events, double quiet_s = 5.0, double every_s = 5.0);
// Stops reporting; prints a last line when any was printed.
void stop();
// Called by Simulation every kTickEvents events.
inline void tick() {
  if (detail::enabled.load(std::memory_order_relaxed)) detail::tick();
}
// Work that is not a Simulation's (the reliability campaigns' failure and checkpoint events):
// `n` more done, and `n` more expected (when the work's size is known only once it starts).
inline void add(uint64_t n) {
  if (detail::enabled.load(std::memory_order_relaxed)) detail::add(n);
}
inline void extend(double n) {
  if (detail::enabled.load(std::memory_order_relaxed)) detail::extend(n);
}

}  // namespace ct::sim::progress

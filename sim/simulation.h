// One discrete-event simulation: a clock, a pending-event set and random streams.
//
// A Simulation is a value with no global state, so many run side by side (oneTBB, Python).
// Events are dispatched in (time, priority, insertion sequence) order; a handler may
// schedule, reschedule or cancel events, including at the current time (FIFO lane).
#pragma once

#include <cstdint>

#include "sim/event_queue.h"
#include "sim/progress.h"
#include "sim/rng.h"
#include "sim/units.h"

namespace ct::sim {

class Simulation {
 public:
  explicit Simulation(uint64_t seed = 1) : seed_(seed) {}
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  [[nodiscard]] Time now() const { return now_; }
  [[nodiscard]] uint64_t seed() const { return seed_; }
  [[nodiscard]] uint64_t events_executed() const { return executed_; }
  [[nodiscard]] size_t pending() const { return queue_.size(); }

  void schedule_in(Duration delay, EventHandler& handler, uint64_t tag = 0,
                   uint8_t priority = EventQueue::kDefaultPriority) {
    assert(delay >= Duration::zero());
    if (delay == Duration::zero() && priority == EventQueue::kDefaultPriority) {
      queue_.push_now(now_.ps(), &handler, tag);
    } else {
      queue_.push((now_ + delay).ps(), priority, &handler, tag);
    }
  }
  void schedule_at(Time at, EventHandler& handler, uint64_t tag = 0,
                   uint8_t priority = EventQueue::kDefaultPriority) {
    schedule_in(at - now_, handler, tag, priority);
  }
  // (Re)schedules a component's timer; O(log n) when it was already pending.
  void schedule(Timer& timer, Time at, uint8_t priority = EventQueue::kDefaultPriority) {
    assert(at >= now_);
    queue_.schedule(timer, at.ps(), priority);
  }
  void cancel(Timer& timer) { queue_.cancel(timer); }

  // Runs until no event is pending or stop() is called; returns events executed.
  uint64_t run() { return run_until(Time::max()); }
  // Runs events with time <= horizon; the clock ends at the last event run.
  uint64_t run_until(Time horizon) {
    stopped_ = false;
    const uint64_t before = executed_;
    while (!stopped_ && !queue_.empty() && queue_.next_time_ps() <= horizon.ps()) {
      const FiredEvent e = queue_.pop();
      now_ = Time::from_ps(e.time_ps);
      if ((++executed_ & (progress::kTickEvents - 1)) == 0) progress::tick();
      e.handler->on_event(e.tag);
    }
    return executed_ - before;
  }
  void stop() { stopped_ = true; }

  // Independent random stream for one component.
  [[nodiscard]] Rng rng(uint64_t stream) const { return Rng(seed_, stream); }

 private:
  EventQueue queue_;
  Time now_ = Time::zero();
  uint64_t seed_;
  uint64_t executed_ = 0;
  bool stopped_ = false;
};

}  // namespace ct::sim

#include "models/replay/executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "models/network/network.h"
#include "models/topology/topology.h"

namespace ct::replay {

TimeBreakdown& TimeBreakdown::operator+=(const TimeBreakdown& o) {
  compute_s += o.compute_s;
  exposed_tp_comm_s += o.exposed_tp_comm_s;
  exposed_pp_comm_s += o.exposed_pp_comm_s;
  exposed_dp_comm_s += o.exposed_dp_comm_s;
  bubble_s += o.bubble_s;
  optimizer_s += o.optimizer_s;
  other_s += o.other_s;
  straggler_s += o.straggler_s;
  return *this;
}

double TimeBreakdown::total() const {
  return compute_s + exposed_tp_comm_s + exposed_pp_comm_s + exposed_dp_comm_s + bubble_s + optimizer_s +
         other_s + straggler_s;
}

namespace {

constexpr uint64_t kSendTag = uint64_t{1} << 62;
constexpr uint64_t kCollectiveTag = uint64_t{2} << 62;
constexpr uint64_t kPayload = (uint64_t{1} << 62) - 1;
constexpr uint64_t kStopEvent = uint64_t{1} << 63;  // Executor::on_event tag of a RankStop
constexpr size_t kMaxListedRanks = 64;              // RankWait::missing / mismatched

const char* instr_name(const Instr& i) {
  switch (i.category) {
    case Category::forward:
      return "forward";
    case Category::backward:
      return "backward";
    case Category::optimizer:
      return "optimizer";
    case Category::step_end:
      return "step_end";
    case Category::pp:
      return i.kind == InstrKind::send ? "pp_send" : "pp_recv";
    case Category::dp:
      if (i.kind == InstrKind::compute) return "dp_host_copies";
      return i.collective == CollectiveKind::all_gather       ? "dp_all_gather"
             : i.collective == CollectiveKind::reduce_scatter ? "dp_reduce_scatter"
             : i.collective == CollectiveKind::all_to_all     ? "all_to_all"
                                                              : "dp_all_reduce";
  }
  return "?";
}

class Executor final : public sim::EventHandler, public CommHandler {
 public:
  Executor(const StepProgram& program, sim::Simulation& sim, Communicator& comm,
           const ExecutorOptions& options)
      : program_(program), sim_(sim), comm_(comm), options_(options), groups_(program.groups.size()) {
    ranks_.resize(program.ranks.size());
    for (size_t r = 0; r < program.ranks.size(); ++r) {
      RankState& s = ranks_[r];
      const auto& instrs = program.ranks[r].instrs;
      s.done.assign(instrs.size(), 0);
      s.started.assign(instrs.size(), 0);
      instrs_total_ += instrs.size();
      s.done_at.assign(instrs.size(), 0.0);
      s.started_at.assign(instrs.size(), 0.0);
      for (size_t i = 0; i < instrs.size(); ++i) {
        if (instrs[i].stream != Stream::none)
          s.streams[static_cast<size_t>(instrs[i].stream)].push_back(
              {static_cast<int32_t>(i), instrs[i].after, instrs[i].after2});
      }
      for (uint8_t k = 0; k < kStreamSlots; ++k) {
        if (!s.streams[k].empty()) s.used_streams[s.used_count++] = k;
        load_head(s, k);
      }
      s.speed = r < options.rank_speed.size() ? options.rank_speed[r] : 1.0;
      s.weight = r < options.rank_weight.size() ? options.rank_weight[r] : 1.0;
      s.rate = s.speed;
      s.jitter = sim::Rng(options.jitter_seed, kJitterStream + r);
      s.steps.resize(static_cast<size_t>(program.steps));
      s.step_end.assign(static_cast<size_t>(program.steps), 0.0);
      s.step_compute.assign(static_cast<size_t>(program.steps), 0.0);
      timers_.emplace_back(this, r);
    }
    stop_acted_.assign(options.stops.size(), false);
    for (size_t k = 0; k < options.stops.size(); ++k) {
      const RankStop& stop = options.stops[k];
      if (stop.rank < 0 || static_cast<size_t>(stop.rank) >= ranks_.size() || !(stop.at_s >= 0))
        throw std::invalid_argument("executor: a rank stop names no rank of the program or a negative time");
      sim_.schedule_at(sim::Time::zero() + sim::Duration::from_seconds(stop.at_s), *this, kStopEvent | k);
    }
  }

  ExecutionResult run() {
    if (options_.trace != nullptr) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (!traced(static_cast<int32_t>(r))) continue;
        const int gpu = program_.ranks[r].gpu;
        options_.trace->process_name(
            gpu, "GPU " + std::to_string(gpu) + " (stage " + std::to_string(program_.ranks[r].stage) + ")");
        options_.trace->thread_name(gpu, static_cast<int>(Stream::compute), "compute");
        options_.trace->thread_name(gpu, static_cast<int>(Stream::p2p), "pipeline p2p");
        options_.trace->thread_name(gpu, static_cast<int>(Stream::dp), "data-parallel collectives");
        for (int k = 1; k <= kExtraCollectiveStreams; ++k) {
          options_.trace->thread_name(gpu, static_cast<int>(collective_stream(k)),
                                      "collectives " + std::to_string(k + 1));
        }
      }
    }
    for (size_t r = 0; r < ranks_.size(); ++r) try_start(static_cast<int32_t>(r));
    ExecutionResult out;
    try {
      sim_.run();
    } catch (const network::NoPathError& e) {  // the communicator aborts: where everyone stood
      out.comm_error = CommError{e.time_s, e.src_gpu, e.dst_gpu, e.what()};
    } catch (const topology::NoRouteError& e) {  // a collective's schedule found no path
      out.comm_error =
          CommError{now(), -1, -1,
                    std::string(e.what()) + "; its RDMA queue pairs error out and NCCL aborts the job", true};
    }
    if (instrs_done_ < instrs_total_) out.stall = diagnose();
    out.events = sim_.events_executed();
    const auto last = static_cast<size_t>(program_.steps - 1);
    for (size_t r = 0; r < ranks_.size(); ++r) {
      RankResult rr;
      rr.gpu = program_.ranks[r].gpu;
      rr.step_end_s = ranks_[r].step_end;
      rr.last_step = ranks_[r].steps[last];
      rr.last_step_compute_s = ranks_[r].step_compute[last];
      out.ranks.push_back(std::move(rr));
    }
    out.collectives = std::move(records_);
    set_busy(0.0);  // closes the last bucket
    busy_.resize(busy_used_);
    out.busy_gpus = std::move(busy_);
    out.busy_first_bucket = busy_base_;
    for (double& b : out.busy_gpus) b /= options_.busy_bucket_s;
    out.busy_bucket_s = options_.busy_bucket_s;
    return out;
  }

  void on_event(uint64_t tag) override {
    if ((tag & kStopEvent) != 0) {
      stop_rank(static_cast<size_t>(tag & ~kStopEvent));
    } else {
      finish_compute(static_cast<int32_t>(tag));
    }
  }

  void on_comm_done(uint64_t tag) override {
    if ((tag & ~kPayload) == kSendTag) {
      finish_send(static_cast<int32_t>((tag & kPayload) >> 32), static_cast<int32_t>(tag & 0xffffffffU));
    } else {
      finish_collective(static_cast<int32_t>(tag & kPayload));
    }
  }

 private:
  struct StreamEntry {
    int32_t instr, after, after2;
  };
  // Hot fields first: a rank's event touches its first few cache lines and its records.
  struct RankState {
    int32_t running = -1;  // compute instruction in flight
    int active_comm = 0;
    enum class Stopped : uint8_t { no, crash, hang } stopped = Stopped::no;
    Category running_category = Category::forward;
    int16_t running_step = 0;
    uint8_t used_count = 0;
    std::array<uint8_t, kStreamSlots> used_streams{};  // the slots with instructions, in order
    std::array<bool, kStreamSlots> busy{};
    // Per stream, the head instruction (-1: the stream is through) and what it waits for, kept
    // here so that a rank's readiness scan reads its own state, not the program's records.
    std::array<int32_t, kStreamSlots> head_instr{}, head_after{}, head_after2{};
    // What finish_compute needs of the running kernel, copied when it starts (its record is
    // cold by then).
    double running_seconds = 0.0, running_tp_seconds = 0.0, running_started = 0.0;
    double remaining = 0.0, rate = 1.0, last = 0.0, speed = 1.0, weight = 1.0;
    double idle_since = 0.0;
    std::vector<uint8_t> done, started;
    // started_at of a receive (which no stream starts) holds when its send started.
    std::vector<double> done_at, started_at;
    std::vector<TimeBreakdown> steps;
    std::vector<double> step_end, step_compute;
    std::array<uint32_t, kStreamSlots> head{};
    // Per stream, its instructions in order with what each waits for: a stream's next
    // instruction is read from here, in sequence, not from the program's scattered records.
    std::array<std::vector<StreamEntry>, kStreamSlots> streams;
    sim::Rng jitter{0, 0};
    [[nodiscard]] std::span<const uint8_t> used() const { return {used_streams.data(), used_count}; }
  };
  struct GroupState {
    std::vector<std::pair<int32_t, int32_t>> waiting;  // (rank, instr)
    double start = 0.0;
  };

  double now() const { return sim_.now().seconds(); }
  const Instr& instr(int32_t r, int32_t i) const {
    return program_.ranks[static_cast<size_t>(r)].instrs[static_cast<size_t>(i)];
  }

  static void load_head(RankState& s, uint8_t k) {
    if (s.head[k] == s.streams[k].size()) {
      s.head_instr[k] = -1;
      return;
    }
    const StreamEntry& e = s.streams[k][s.head[k]];
    s.head_instr[k] = e.instr;
    s.head_after[k] = e.after;
    s.head_after2[k] = e.after2;
  }

  static bool head_ready(const RankState& s, uint8_t k) {
    const int32_t a = s.head_after[k], b = s.head_after2[k];
    return (a < 0 || s.done[static_cast<size_t>(a)]) && (b < 0 || s.done[static_cast<size_t>(b)]);
  }

  void try_start(int32_t r) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    if (s.stopped != RankState::Stopped::no) return;
    // Another pass only after an instruction completed during this one (a zero-length
    // compute finishes as it starts): starting one only makes its own stream busy, so without
    // a completion no other head became ready.
    bool progress = true;
    while (progress) {
      progress = false;
      const auto done_before = instrs_done_;
      for (const uint8_t k : s.used()) {
        if (s.busy[k] || s.head_instr[k] < 0 || !head_ready(s, k)) continue;
        const int32_t i = s.head_instr[k];
        const Instr& in = instr(r, i);
        ++s.head[k];
        load_head(s, k);
        // The stream's next instruction is read when this one is done: fetch its record now.
        if (s.head_instr[k] >= 0) __builtin_prefetch(&instr(r, s.head_instr[k]));
        s.busy[k] = true;
        s.started[static_cast<size_t>(i)] = 1;
        s.started_at[static_cast<size_t>(i)] = now();
        switch (in.kind) {
          case InstrKind::compute:
            start_compute(r, i);
            break;
          case InstrKind::send:
            start_send(r, i);
            break;
          case InstrKind::collective:
            start_collective(r, i);
            break;
          case InstrKind::recv:
            break;
        }
        progress = instrs_done_ != done_before;
      }
    }
  }

  // The compute stream was idle since idle_since; charge that wait to what it waited for.
  void attribute_wait(int32_t r, const Instr& in) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    const double t = now(), waited = t - s.idle_since;
    if (waited <= 0) return;
    TimeBreakdown& b = s.steps[static_cast<size_t>(in.step)];
    int32_t blocker = -1;
    for (const int32_t dep : {in.after, in.after2}) {
      if (dep >= 0 &&
          (blocker < 0 || s.done_at[static_cast<size_t>(dep)] > s.done_at[static_cast<size_t>(blocker)]))
        blocker = dep;
    }
    if (blocker < 0 || s.done_at[static_cast<size_t>(blocker)] <= s.idle_since) {
      b.other_s += waited;
      return;
    }
    const Instr& dep = instr(r, blocker);
    if (dep.kind == InstrKind::recv) {
      const double sent = std::max(s.idle_since, std::min(s.started_at[static_cast<size_t>(blocker)], t));
      b.bubble_s += sent - s.idle_since;
      b.exposed_pp_comm_s += t - sent;
    } else if (dep.kind == InstrKind::collective) {
      b.exposed_dp_comm_s += waited;
    } else {
      b.other_s += waited;
    }
  }

  void start_compute(int32_t r, int32_t i) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    const Instr& in = instr(r, i);
    attribute_wait(r, in);
    s.running = i;
    s.running_seconds = in.seconds;
    s.running_tp_seconds = in.tp_seconds;
    s.running_category = in.category;
    s.running_step = in.step;
    s.running_started = now();
    if (in.seconds <= 0) {
      finish_compute(r);
      return;
    }
    s.remaining = in.seconds * jitter_factor(s, in);
    s.last = now();
    set_busy(busy_now_ + s.weight);
    sim_.schedule(timers_[static_cast<size_t>(r)],
                  sim_.now() + sim::Duration::from_seconds(s.remaining / s.rate));
  }

  double jitter_factor(RankState& s, const Instr& in) {
    const double c = options_.kernel_jitter_cv;
    if (!(c > 0.0) || in.category == Category::step_end) return 1.0;
    const double sigma = std::sqrt(std::log1p(c * c));
    return std::exp(s.jitter.normal(-0.5 * sigma * sigma, sigma));
  }

  void finish_compute(int32_t r) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    const int32_t i = s.running;
    s.running = -1;
    const double seconds = s.running_seconds;
    const auto step = static_cast<size_t>(s.running_step);
    if (seconds > 0) set_busy(busy_now_ - s.weight);
    const double t = now(), busy = t - s.running_started;
    TimeBreakdown& b = s.steps[step];
    if (s.running_category == Category::optimizer) {
      b.optimizer_s += busy;
    } else if (s.running_category == Category::step_end) {
      s.step_end[step] = t;
      if (s.running_step + 1 >= options_.busy_from_step) busy_on_ = true;
    } else if (s.running_category == Category::dp) {
      b.exposed_dp_comm_s += busy;  // a list-API collective's copies on the training thread
    } else {
      const double tp = seconds > 0 ? busy * s.running_tp_seconds / seconds : 0.0;
      b.exposed_tp_comm_s += tp;
      b.compute_s += busy - tp;
      s.step_compute[step] += busy - tp;
    }
    if (traced(r)) trace(r, instr(r, i), static_cast<int>(Stream::compute), s.running_started);
    s.idle_since = t;
    complete(r, i, Stream::compute);
  }

  void complete(int32_t r, int32_t i, Stream stream) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    s.done[static_cast<size_t>(i)] = 1;
    s.done_at[static_cast<size_t>(i)] = now();
    last_progress_ = now();
    // The run is over when every instruction of every rank has completed: stop, so timed
    // events that outlive it (a link fault's end) do not move the clock past the work.
    if (++instrs_done_ == instrs_total_ && options_.stop_when_done) sim_.stop();
    if (stream != Stream::none) s.busy[static_cast<size_t>(stream)] = false;
    try_start(r);
  }

  void set_comm(int32_t r, int delta) {
    RankState& s = ranks_[static_cast<size_t>(r)];
    s.active_comm += delta;
    const double rate = s.speed * (s.active_comm > 0 ? 1.0 - options_.comm_slowdown : 1.0);
    if (rate == s.rate) return;
    if (s.running >= 0 && s.remaining > 0) {
      const double t = now();
      s.remaining = std::max(0.0, s.remaining - (t - s.last) * s.rate);
      s.last = t;
      sim_.schedule(timers_[static_cast<size_t>(r)],
                    sim_.now() + sim::Duration::from_seconds(s.remaining / rate));
    }
    s.rate = rate;
  }

  void start_send(int32_t r, int32_t i) {
    const Instr& in = instr(r, i);
    ranks_[static_cast<size_t>(in.peer)].started_at[static_cast<size_t>(in.peer_instr)] =
        now();  // the receive's
    set_comm(r, +1);
    comm_.send(program_.ranks[static_cast<size_t>(r)].gpu, program_.ranks[static_cast<size_t>(in.peer)].gpu,
               sim::Bytes{in.bytes}, *this,
               kSendTag | (static_cast<uint64_t>(r) << 32) | static_cast<uint32_t>(i));
  }

  void finish_send(int32_t r, int32_t i) {
    const Instr& in = instr(r, i);
    RankState& s = ranks_[static_cast<size_t>(r)];
    // A transfer from or to a crashed rank never completes: its sender waits for
    // acknowledgements that do not come, its receiver never gets the data.
    if (crashed(r) || crashed(in.peer)) return;
    set_comm(r, -1);
    trace(r, in, static_cast<int>(Stream::p2p), s.started_at[static_cast<size_t>(i)]);
    trace_flow(r, in, s.started_at[static_cast<size_t>(i)]);
    if (in.stream == Stream::compute) {  // a blocking send held the compute stream
      s.steps[static_cast<size_t>(in.step)].exposed_pp_comm_s += now() - s.started_at[static_cast<size_t>(i)];
      s.idle_since = now();
    }
    complete(in.peer, in.peer_instr, Stream::none);
    complete(r, i, in.stream);
  }

  void start_collective(int32_t r, int32_t i) {
    const Instr& in = instr(r, i);
    set_comm(r, +1);
    GroupState& g = groups_[static_cast<size_t>(in.group)];
    g.waiting.emplace_back(r, i);
    const Group& group = program_.groups[static_cast<size_t>(in.group)];
    if (g.waiting.size() < group.simulated.size()) return;
    // A member that crashed after joining never runs its part, and members that entered
    // different collectives (another kind) never match, as NCCL's would not: the others wait.
    for (const auto& member : g.waiting) {
      if (crashed(member.first) || instr(member.first, member.second).collective != in.collective) return;
    }
    g.start = now();
    comm_.collective(in.collective, group.gpus, sim::Bytes{in.bytes}, *this,
                     kCollectiveTag | static_cast<uint64_t>(in.group), group.hash);
  }

  void finish_collective(int32_t group_index) {
    GroupState& g = groups_[static_cast<size_t>(group_index)];
    for (const auto& member : g.waiting) {
      if (crashed(member.first)) return;  // died during the collective: it never completes
    }
    const auto members = std::move(g.waiting);
    g.waiting.clear();
    const Instr& first = instr(members.front().first, members.front().second);
    if (first.step == program_.steps - 1) {
      records_.push_back({first.collective,
                          static_cast<int>(program_.groups[static_cast<size_t>(group_index)].gpus.size()),
                          first.bytes, g.start, now()});
    }
    for (const auto& [r, i] : members) {
      set_comm(r, -1);
      trace(r, instr(r, i), static_cast<int>(instr(r, i).stream),
            ranks_[static_cast<size_t>(r)].started_at[static_cast<size_t>(i)]);
    }
    for (const auto& [r, i] : members) complete(r, i, instr(r, i).stream);
  }

  // Integrates the number of computing GPUs into fixed-width time buckets (integer ps): each
  // bucket adds busy x (overlap in ps) x 1e-12 per interval in time order; a bucket that one
  // interval covers whole gets that one term, written at once (it held 0 before). busy_[i] is
  // bucket busy_base_ + i. Until recording starts (ExecutorOptions::busy_from_step) only the
  // bucket the last interval ended in is kept: the one recording may start in.
  void set_busy(double value) {
    const int64_t t = sim_.now().ps();
    if (options_.track_busy && t > busy_since_ps_) {
      const int64_t w = busy_bucket_ps_;
      auto bucket = static_cast<size_t>(busy_since_ps_ / w);
      if (!busy_on_ && bucket > busy_base_) {
        const size_t k = bucket - busy_base_;
        const double partial = k < busy_used_ ? busy_[k] : 0.0;
        std::fill(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(busy_used_), 0.0);
        busy_[0] = partial;
        busy_used_ = 1;
        busy_base_ = bucket;
      }
      const auto last = static_cast<size_t>((t - 1) / w) - busy_base_;  // the instant before t
      if (busy_.size() <= last) busy_.resize(std::max(last + 1, 2 * busy_.size()), 0.0);
      busy_used_ = std::max(busy_used_, last + 1);
      const size_t base = busy_base_;
      int64_t end = std::min(t, static_cast<int64_t>(bucket + 1) * w);
      busy_[bucket - base] += busy_now_ * static_cast<double>(end - busy_since_ps_) * 1e-12;
      if (end < t) {
        const double whole = busy_now_ * static_cast<double>(w) * 1e-12;
        const auto full_end = static_cast<size_t>(t / w);  // buckets before it end by t
        for (++bucket; bucket < full_end; ++bucket) busy_[bucket - base] = whole;
        end = static_cast<int64_t>(full_end) * w;
        if (end < t) busy_[full_end - base] += busy_now_ * static_cast<double>(t - end) * 1e-12;
      }
      busy_since_ps_ = t;
    }
    busy_now_ = value;
  }

  bool traced(int32_t r) const {
    return static_cast<size_t>(r) < options_.traced.size() && options_.traced[static_cast<size_t>(r)] != 0;
  }

  // The event's args: what the instruction is, as the step program has it.
  std::string trace_args(const Instr& in) const {
    std::string a = "{\"step\":" + std::to_string(in.step);
    if (in.kind == InstrKind::compute) {
      if (in.category == Category::forward || in.category == Category::backward) {
        a += ",\"microbatch\":" + std::to_string(in.microbatch) + ",\"chunk\":" + std::to_string(in.chunk);
      }
      if (in.tp_seconds > 0) a += ",\"exposed_tp_comm_s\":" + std::to_string(in.tp_seconds);
    } else if (in.kind == InstrKind::send || in.kind == InstrKind::recv) {
      a += ",\"microbatch\":" + std::to_string(in.microbatch) + ",\"chunk\":" + std::to_string(in.chunk) +
           ",\"bytes\":" + std::to_string(in.bytes);
      if (in.peer >= 0)
        a += ",\"peer_gpu\":" + std::to_string(program_.ranks[static_cast<size_t>(in.peer)].gpu);
    } else if (in.kind == InstrKind::collective) {
      a += ",\"bytes\":" + std::to_string(in.bytes);
      if (in.group >= 0) {
        a += ",\"group\":" + std::to_string(in.group) +
             ",\"group_ranks\":" + std::to_string(program_.groups[static_cast<size_t>(in.group)].gpus.size());
      }
    }
    return a + "}";
  }

  void trace(int32_t r, const Instr& in, int tid, double start) {
    if (!traced(r) || in.category == Category::step_end) return;
    const int gpu = program_.ranks[static_cast<size_t>(r)].gpu;
    if (Timeline* t = options_.timeline; t != nullptr) {
      t->gpu.push_back(gpu);
      t->stream.push_back(tid);
      t->kind.push_back(static_cast<int64_t>(in.kind));
      t->category.push_back(static_cast<int64_t>(in.category));
      t->step.push_back(in.step);
      t->start_s.push_back(start);
      t->seconds.push_back(now() - start);
    }
    if (options_.trace == nullptr) return;
    const sim::Time t0 = sim::Time::zero() + sim::Duration::from_seconds(start);
    options_.trace->complete(gpu, tid, instr_name(in), instr_name(in), t0, sim_.now() - t0, trace_args(in));
  }

  // A pipeline send's arrow (activation or gradient): from the send on the sender's p2p row to the
  // receiver's next pass.
  void trace_flow(int32_t r, const Instr& in, double start) {
    if (options_.trace == nullptr || !traced(r) || !traced(in.peer)) return;
    const uint64_t id = ++flows_;
    options_.trace->flow_start(program_.ranks[static_cast<size_t>(r)].gpu, static_cast<int>(Stream::p2p),
                               "pp_send", "pp", id, sim::Time::zero() + sim::Duration::from_seconds(start));
    options_.trace->flow_end(program_.ranks[static_cast<size_t>(in.peer)].gpu,
                             static_cast<int>(Stream::compute), "pp_send", "pp", id, sim_.now());
  }

  bool crashed(int32_t r) const {
    return ranks_[static_cast<size_t>(r)].stopped == RankState::Stopped::crash;
  }

  void stop_rank(size_t k) {
    const RankStop& stop = options_.stops[k];
    RankState& s = ranks_[static_cast<size_t>(stop.rank)];
    if (s.stopped != RankState::Stopped::no) return;  // the first stop of a rank wins
    stop_acted_[k] = std::find(s.done.begin(), s.done.end(), uint8_t{0}) != s.done.end();
    s.stopped = stop.crash ? RankState::Stopped::crash : RankState::Stopped::hang;
    if (stop.crash && s.running >= 0) {  // the kernel dies with the process
      sim_.cancel(timers_[static_cast<size_t>(stop.rank)]);
      if (instr(stop.rank, s.running).seconds > 0) set_busy(busy_now_ - s.weight);
      s.running = -1;
    }
  }

  // The instruction rank r waits in: the communication it entered longest ago and never left,
  // else a receive that a stream's next instruction waits for; -1 if none.
  int32_t waiting_instr(int32_t r, double& since) const {
    const RankState& s = ranks_[static_cast<size_t>(r)];
    const auto& instrs = program_.ranks[static_cast<size_t>(r)].instrs;
    int32_t best = -1;
    for (size_t i = 0; i < instrs.size(); ++i) {
      if (!s.started[i] || s.done[i] || instrs[i].kind == InstrKind::compute) continue;
      if (best < 0 || s.started_at[i] < s.started_at[static_cast<size_t>(best)])
        best = static_cast<int32_t>(i);
    }
    if (best >= 0) {
      since = s.started_at[static_cast<size_t>(best)];
      return best;
    }
    for (const uint8_t k : s.used()) {
      if (s.head_instr[k] < 0) continue;
      for (const int32_t dep : {s.head_after[k], s.head_after2[k]}) {
        if (dep >= 0 && !s.done[static_cast<size_t>(dep)] &&
            instrs[static_cast<size_t>(dep)].kind == InstrKind::recv) {
          since = k == static_cast<uint8_t>(Stream::compute) ? s.idle_since : last_progress_;
          return dep;
        }
      }
    }
    return -1;
  }

  // Per rank, how many collectives of each group it completed.
  std::vector<std::unordered_map<int32_t, int64_t>> completed_per_group() const {
    std::vector<std::unordered_map<int32_t, int64_t>> out(ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const auto& instrs = program_.ranks[r].instrs;
      for (size_t i = 0; i < instrs.size(); ++i) {
        if (instrs[i].kind == InstrKind::collective && ranks_[r].done[i]) ++out[r][instrs[i].group];
      }
    }
    return out;
  }

  // What a collective waits for: members that never joined it, and members that joined a
  // different collective of the group (kind or sequence number). `joined`: the group's
  // waiting members (rank -> instruction).
  void collective_wait(int32_t r, const Instr& in, int64_t seq,
                       const std::vector<std::unordered_map<int32_t, int64_t>>& completed,
                       const std::unordered_map<int32_t, int32_t>& joined, RankWait& w) const {
    for (const int m : program_.groups[static_cast<size_t>(in.group)].simulated) {
      if (m == r) continue;
      const auto it = joined.find(m);
      const int gpu = program_.ranks[static_cast<size_t>(m)].gpu;
      if (it == joined.end()) {
        if (w.missing.size() < kMaxListedRanks) w.missing.push_back(gpu);
        continue;
      }
      const Instr& other = instr(m, it->second);
      const auto c = completed[static_cast<size_t>(m)].find(in.group);
      const int64_t other_seq = c == completed[static_cast<size_t>(m)].end() ? 0 : c->second;
      if ((other.collective != in.collective || other_seq != seq) && w.mismatched.size() < kMaxListedRanks)
        w.mismatched.push_back(gpu);
    }
  }

  Stall diagnose() const {
    Stall out;
    out.first_wait_s = std::numeric_limits<double>::infinity();
    out.last_progress_s = last_progress_;
    out.stop_acted = stop_acted_;
    const auto completed = completed_per_group();
    std::unordered_map<int32_t, std::unordered_map<int32_t, int32_t>> joined;  // per group, built once
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& s = ranks_[r];
      RankWait w;
      w.gpu = program_.ranks[r].gpu;
      const bool undone = std::find(s.done.begin(), s.done.end(), uint8_t{0}) != s.done.end();
      w.state = s.stopped == RankState::Stopped::crash  ? RankWait::State::killed
                : s.stopped == RankState::Stopped::hang ? RankWait::State::hung
                : undone                                ? RankWait::State::waiting
                                                        : RankWait::State::finished;
      double since = 0;
      const int32_t i = undone ? waiting_instr(static_cast<int32_t>(r), since) : -1;
      if (i >= 0) {
        const Instr& in = instr(static_cast<int32_t>(r), i);
        w.waiting_in = instr_name(in);
        w.step = in.step;
        w.bytes = in.bytes;
        w.since_s = since;
        if (in.kind == InstrKind::collective) {
          w.group = in.group;
          const auto c = completed[r].find(in.group);
          w.seq = c == completed[r].end() ? 0 : c->second;
          if (!out.groups.count(in.group)) {
            out.groups[in.group] = program_.groups[static_cast<size_t>(in.group)].gpus;
            const auto& waiting = groups_[static_cast<size_t>(in.group)].waiting;
            joined[in.group] = std::unordered_map<int32_t, int32_t>(waiting.begin(), waiting.end());
          }
          collective_wait(static_cast<int32_t>(r), in, w.seq, completed, joined.at(in.group), w);
        } else if (in.peer >= 0) {
          w.missing.push_back(program_.ranks[static_cast<size_t>(in.peer)].gpu);
        }
        if (w.state == RankWait::State::waiting) out.first_wait_s = std::min(out.first_wait_s, since);
      }
      out.ranks.push_back(std::move(w));
    }
    return out;
  }

  const StepProgram& program_;
  sim::Simulation& sim_;
  Communicator& comm_;
  const ExecutorOptions& options_;
  std::vector<RankState> ranks_;
  size_t instrs_done_ = 0, instrs_total_ = 0;
  double last_progress_ = 0.0;
  std::vector<bool> stop_acted_;
  std::deque<sim::Timer> timers_;
  std::vector<GroupState> groups_;
  std::vector<CollectiveRecord> records_;
  std::vector<double> busy_;
  size_t busy_used_ = 0;  // buckets reached so far (busy_ grows ahead of it)
  size_t busy_base_ = 0;  // the bucket busy_[0] is
  bool busy_on_ = options_.busy_from_step <= 0;
  double busy_now_ = 0.0;
  int64_t busy_since_ps_ = 0;
  const int64_t busy_bucket_ps_ =
      std::max<int64_t>(1, sim::Duration::from_seconds(options_.busy_bucket_s).count_ps());
  uint64_t flows_ = 0;  // flow arrows written (their ids)
};

}  // namespace

const char* state_name(RankWait::State state) {
  switch (state) {
    case RankWait::State::finished:
      return "finished";
    case RankWait::State::waiting:
      return "waiting";
    case RankWait::State::killed:
      return "killed";
    case RankWait::State::hung:
      return "hung";
  }
  return "?";
}

std::string stall_message(const Stall& stall) {
  size_t waiting = 0;
  const RankWait* first = nullptr;
  for (const RankWait& w : stall.ranks) {
    if (w.state == RankWait::State::finished) continue;
    ++waiting;
    if (first == nullptr) first = &w;
  }
  if (first == nullptr) return "replay stalled";
  std::string out = "replay stalled: " + std::to_string(waiting) + " rank(s) never finished; rank " +
                    std::to_string(first->gpu) + " waits in " +
                    (first->waiting_in.empty() ? std::string("nothing it entered") : first->waiting_in) +
                    " of step " + std::to_string(first->step);
  if (first->group >= 0)
    out += " (group " + std::to_string(first->group) + ", sequence " + std::to_string(first->seq) + ")";
  if (!first->missing.empty()) {
    out += " for rank(s)";
    for (size_t i = 0; i < first->missing.size() && i < 8; ++i)
      out += " " + std::to_string(first->missing[i]);
    if (first->missing.size() > 8) out += " ...";
  }
  if (!first->mismatched.empty())
    out += "; rank " + std::to_string(first->mismatched.front()) +
           " entered a different collective of the group";
  return out;
}

ExecutionResult execute(const StepProgram& program, sim::Simulation& sim, Communicator& comm,
                        const ExecutorOptions& options) {
  Executor executor(program, sim, comm, options);
  return executor.run();
}

}  // namespace ct::replay

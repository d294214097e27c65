// PyTorch execution trace + Kineto trace -> one-rank replay::StepProgram (GPU 0).
//
// Rules:
//   * Matching. An ET node and a Kineto cpu_op/user_annotation are the same operator call when
//     the node's rf_id equals the event's "Record function id" (> 0: the ET's process and
//     thread root nodes carry 0; a Kineto trace without any, PyTorch <= 2.1, is matched by
//     "External id", which its ET's rf_id equals); their names must then agree, or
//     the two files are not of the same run (error naming the ET node). No match at all is an
//     error. A GPU event (kernel, memset, memcpy on the chosen device) belongs to the operator
//     whose External id its launch call (same correlation) carries: the innermost operator
//     running when it was launched. Events whose operator is not in the ET are counted
//     (kernels_outside_et) and not replayed: the ET defines the step.
//   * GPU ops. Every ET node with measured GPU events is one GPU op, its events in launch order
//     with their measured durations. An ET op that normally launches GPU work (op_work.h: GEMM,
//     attention, element-wise/memory-bound) on CUDA tensors whose whole subtree (the node and
//     the nodes whose ctrl_deps chain leads to it) has no measured GPU event is filled: one
//     instruction of the compute model's time for its shapes (the outermost such op, so a
//     linear is filled as one GEMM, not also its addmm). One whose shapes the model cannot take
//     is counted in not_modelled and adds nothing.
//   * Order. GPU ops are issued in the order of their CPU launch: a measured op at its first
//     launch call, a filled op when its operator returned (an ET-only op: with the operator
//     before it in rf_id order), a filled op on the stream with the most kernels. Each CUDA
//     stream is an in-order queue and streams run side by side (launch_model.h), an event
//     that waited for another stream's event keeping that wait. The program lists the items in
//     their modelled start order on the executor's one compute engine, each for the part of
//     its interval beyond the ones before it, so concurrent streams keep their overlap (their
//     contention is the measured one, not re-simulated); the measured overlap is reported.
//     NCCL kernels (name contains "nccl") count as exposed communication (tp_seconds), as a
//     one-rank program has no peers.
//   * Dependencies. Data: an op reads the storages of its tensor inputs and writes those of
//     its outputs and of the inputs its schema marks mutable ("Tensor(a!)"); it depends on the
//     last earlier GPU op that wrote any storage it reads or writes (read-after-write,
//     write-after-write), "earlier" in the program's order (GPU start order). Up to two become
//     after/after2 of its first instruction, more are joined (trace_import.h); its further
//     kernels follow one another. The program is one in-order compute stream, so these
//     dependencies are already met by its order; they document the graph.
//   * Time. The CPU launch timeline and the GPU queue (launch_model.h) give each instruction
//     its start; the time the GPU waits before it becomes an idle instruction (trace_import.h),
//     and CPU time after the last kernel one more before the step end. Kernel times are the
//     trace's; no constant is fitted.
//   * Category: optimizer under an "Optimizer.step*" node, backward under an
//     "autograd::engine::evaluate_function*" node, forward otherwise.
#include "models/trace/pytorch_et.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "models/trace/et_graph.h"
#include "models/trace/kineto_events.h"
#include "models/trace/launch_model.h"
#include "models/trace/op_overhead.h"
#include "models/trace/op_work.h"
#include "models/trace/program_build.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using replay::Category;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

struct Unit {
  size_t node = 0;                              // ET node index
  std::vector<const kineto::GpuEvent*> events;  // measured
  bool filled = false;
  double issue_us = 0;  // filled: when its operator returned
  double filled_s = 0;
};

// The op with batch-carrying dimensions scaled (EtImportOptions::batch_scale); false when no
// tensor had one.
bool scale_batch(OpView& op, int64_t batch, int64_t tokens, double scale) {
  bool changed = false;
  auto fix = [&](TensorInfo& t) {
    int64_t numel = 1;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if ((d == 0 && t.shape[d] == batch) || t.shape[d] == tokens) {
        t.shape[d] = std::max<int64_t>(1, std::llround(static_cast<double>(t.shape[d]) * scale));
        changed = true;
      }
      numel *= t.shape[d];
    }
    if (t.numel > 0) t.numel = numel;
  };
  for (auto* args : {&op.inputs, &op.outputs}) {
    for (Arg& a : *args) {
      for (TensorInfo& t : a.tensors) fix(t);
    }
  }
  return changed;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

Category category_of(const EtGraph& g, size_t node) {
  bool backward = false;
  for (int64_t i = static_cast<int64_t>(node); i >= 0;) {
    const EtNode& n = g.nodes[static_cast<size_t>(i)];
    if (n.op.name.rfind("Optimizer.step", 0) == 0) return Category::optimizer;
    backward = backward || n.op.name.rfind("autograd::engine::evaluate_function", 0) == 0;
    i = n.parent < 0 ? -1 : static_cast<int64_t>(g.by_id.at(n.parent));
  }
  return backward ? Category::backward : Category::forward;
}

// Storages an op reads and writes (defined tensors only).
void storages(const OpView& op, std::vector<int64_t>& reads, std::vector<int64_t>& writes) {
  const std::vector<bool> mutated = mutated_arguments(op.schema);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    for (const TensorInfo& t : op.inputs[i].tensors) {
      if (!t.defined() || t.storage < 0) continue;
      reads.push_back(t.storage);
      if (i < mutated.size() && mutated[i]) writes.push_back(t.storage);
    }
  }
  for (const Arg& a : op.outputs) {
    for (const TensorInfo& t : a.tensors) {
      if (t.defined() && t.storage >= 0) writes.push_back(t.storage);
    }
  }
}

// One import of a Kineto profile with its execution trace, phase by phase: match operators,
// collect the GPU events per operator, fill what launched nothing with the compute model,
// measure gaps and launch latencies, apply what-ifs, order the launches, schedule them on the
// CPU timeline, and emit the replayed program.
struct EtImport {
  // The stream gaps, launch latencies and cross-stream waits the profile shows per GPU event.
  struct Shown {
    bool queued = false;
    double gap_us = 0, latency_us = 0;
    const kineto::GpuEvent* waited = nullptr;
  };

  EtImport(const std::string& kineto_path_, const std::string& et_path_, const EtImportOptions& options_)
      : kineto_path(kineto_path_),
        et_path(et_path_),
        options(options_),
        kt(kineto::read_kineto(kineto_path_, "trace.path")),
        g(read_execution_trace(et_path_)),
        model(options_.gpu, options_.calibration),
        target(options_.what_if ? hardware::ComputeModel(options_.target_gpu, options_.target_calibration)
                                : model) {
    st.et_nodes = static_cast<int>(g.nodes.size());
    st.kineto_ops = static_cast<int>(kt.ops.size());
  }

  const std::string& kineto_path;
  const std::string& et_path;
  const EtImportOptions& options;
  const kineto::KinetoTrace kt;
  const EtGraph g;
  const hardware::ComputeModel model, target;
  EtImportStats st;
  std::unordered_map<int64_t, size_t> op_by_external;  // Kineto external id -> op
  std::unordered_map<size_t, size_t> node_of_op;       // Kineto op -> ET node
  std::vector<int64_t> kineto_of;                      // ET node -> Kineto op, -1 if none
  std::vector<kineto::GpuEvent> gpu;
  std::vector<Unit> units;
  std::unordered_map<size_t, size_t> unit_of_node;
  std::vector<std::vector<size_t>> children;
  std::vector<size_t> roots;
  std::vector<uint8_t> has_gpu;  // subtree launched a measured GPU event
  std::vector<OpWork> work;
  std::vector<double> op_end;  // issue time of each ET node
  double cpu_start = 0, cpu_end = 0;
  std::unordered_map<const kineto::GpuEvent*, Shown> shown;
  double median_gap = 0, median_latency = 0;
  int64_t main_stream = 0;  // the stream with the most events: filled ops run there
  std::vector<double> speed_ratio;
  std::vector<uint8_t> batch_scaled;  // ratio already includes the target GPU
  std::vector<LaunchItem> items;
  std::vector<std::pair<size_t, const kineto::GpuEvent*>> item_of;
  LaunchSchedule sched;

  double launch_end(const kineto::GpuEvent* e) const {
    const auto l = kt.launches.find(e->correlation);
    return l != kt.launches.end() ? l->second.ts + l->second.dur : e->ts;
  }
  double launch_begin(const kineto::GpuEvent* e) const {
    const auto l = kt.launches.find(e->correlation);
    return l != kt.launches.end() ? l->second.ts : e->ts;
  }

  // ET nodes and Kineto operators matched by record function id.
  void match_ops() {
    kineto_of.assign(g.nodes.size(), -1);
    std::unordered_map<int64_t, size_t> op_by_rf;
    // Kineto traces of PyTorch <= 2.1 carry no "Record function id"; there the ET's rf_id is the
    // operator's "External id" (as HTA correlates them).
    const bool external =
        std::none_of(kt.ops.begin(), kt.ops.end(), [](const kineto::CpuOp& op) { return op.rf_id > 0; });
    for (size_t i = 0; i < kt.ops.size(); ++i) {
      const int64_t rf = external ? kt.ops[i].external_id : kt.ops[i].rf_id;
      if (rf > 0) op_by_rf.emplace(rf, i);
      if (kt.ops[i].external_id >= 0) op_by_external.emplace(kt.ops[i].external_id, i);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const EtNode& n = g.nodes[i];
      const auto it = n.rf_id > 0 ? op_by_rf.find(n.rf_id) : op_by_rf.end();
      if (it == op_by_rf.end()) continue;
      const kineto::CpuOp& op = kt.ops[it->second];
      if (op.name != n.op.name) {
        throw TraceError("trace.execution_trace: " + et_path + ": node id " + std::to_string(n.id) + " '" +
                         n.op.name + "' has rf_id " + std::to_string(n.rf_id) + " but in " + kineto_path +
                         (external ? " External id " : " Record function id ") + std::to_string(n.rf_id) +
                         " is '" + op.name + "': the traces are not of the same run");
      }
      kineto_of[i] = static_cast<int64_t>(it->second);
      node_of_op[it->second] = i;
      ++st.ops_matched;
    }
    if (st.ops_matched == 0) {
      throw TraceError("trace.execution_trace: " + et_path +
                       ": no node's rf_id matches a Record function id of " + kineto_path + " (" +
                       std::to_string(g.nodes.size()) + " nodes, " + std::to_string(kt.ops.size()) +
                       " Kineto ops): the traces are not of the same run");
    }
  }

  // Measured GPU events -> ET nodes (units).
  void collect_gpu_events() {
    gpu = kineto::device_events(kt, options.device, kineto_path, "trace.path");
    std::set<int64_t> streams;
    double first_ts = 0, last_end = 0;
    bool any = false;
    for (const kineto::GpuEvent& e : gpu) {
      const auto l = kt.launches.find(e.correlation);
      const int64_t ext = l != kt.launches.end() ? l->second.external_id : e.external_id;
      const auto op = op_by_external.find(ext);
      const auto node = op == op_by_external.end() ? node_of_op.end() : node_of_op.find(op->second);
      if (node == node_of_op.end()) {
        ++st.kernels_outside_et;
        continue;
      }
      auto [u, inserted] = unit_of_node.emplace(node->second, units.size());
      if (inserted) {
        units.push_back({});
        units.back().node = node->second;
      }
      units[u->second].events.push_back(&e);
      streams.insert(e.stream);
      first_ts = any ? std::min(first_ts, e.ts) : e.ts;
      last_end = any ? std::max(last_end, e.ts + e.dur) : e.ts + e.dur;
      any = true;
    }
    if (!any) {
      throw TraceError("trace.execution_trace: " + et_path + ": none of the GPU events of " + kineto_path +
                       " was launched by an operator of the execution trace");
    }
    st.gpu_ops = static_cast<int>(units.size());
    st.streams = static_cast<int>(streams.size());
    st.measured_span_s = (last_end - first_ts) * 1e-6;
  }

  // The operator tree, and which subtrees launched a measured GPU event.
  void build_tree() {
    children.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].parent < 0) {
        roots.push_back(i);
      } else {
        children[g.by_id.at(g.nodes[i].parent)].push_back(i);
      }
    }
    has_gpu.assign(g.nodes.size(), 0);
    {
      std::vector<size_t> order, stack(roots.begin(), roots.end());
      while (!stack.empty()) {
        const size_t i = stack.back();
        stack.pop_back();
        order.push_back(i);
        for (const size_t c : children[i]) stack.push_back(c);
      }
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        has_gpu[*it] = unit_of_node.count(*it) != 0 ? 1 : 0;
        for (const size_t c : children[*it]) has_gpu[*it] = has_gpu[*it] || has_gpu[c];
      }
    }
  }

  // Issue time of ET-only nodes: the latest Kineto-timed node before them in rf_id order.
  void issue_times() {
    std::vector<size_t> by_rf(g.nodes.size());
    for (size_t i = 0; i < by_rf.size(); ++i) by_rf[i] = i;
    std::stable_sort(by_rf.begin(), by_rf.end(),
                     [&](size_t a, size_t b) { return g.nodes[a].rf_id < g.nodes[b].rf_id; });
    op_end.assign(g.nodes.size(), 0);
    double carried = std::numeric_limits<double>::quiet_NaN();
    bool timed = false;
    for (const size_t i : by_rf) {
      if (kineto_of[i] >= 0) {
        const kineto::CpuOp& op = kt.ops[static_cast<size_t>(kineto_of[i])];
        op_end[i] = op.ts + op.dur;
        cpu_start = timed ? std::min(cpu_start, op.ts) : op.ts;
        cpu_end = timed ? std::max(cpu_end, op.ts + op.dur) : op.ts + op.dur;
        timed = true;
        carried = op_end[i];
      } else {
        op_end[i] = carried;
      }
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (std::isnan(op_end[i])) op_end[i] = cpu_start;
    }
  }

  // Fills: outermost GPU-class ops on CUDA tensors whose subtree launched nothing.
  void fill_units() {
    work.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) work[i] = op_work(g.nodes[i].op);
    {
      std::vector<size_t> stack(roots.begin(), roots.end());
      while (!stack.empty()) {
        const size_t i = stack.back();
        stack.pop_back();
        const OpWork& w = work[i];
        if (w.kind != OpWork::Kind::none && !has_gpu[i] && on_gpu(g.nodes[i].op)) {
          if (!w.modelled) {
            ++st.not_modelled[g.nodes[i].op.name + ": " + w.why];
            continue;
          }
          Unit u;
          u.node = i;
          u.filled = true;
          u.filled_s = modelled_seconds(w, target);
          u.issue_us = op_end[i];
          units.push_back(u);
          ++st.filled_by_compute_model;
          ++st.filled_ops[g.nodes[i].op.name];
          continue;
        }
        for (const size_t c : children[i]) stack.push_back(c);
      }
    }
  }

  // Measured gaps and launch latencies, per CUDA stream in GPU order of the measured events:
  // an event whose launch returned before its stream was free was queued (its gap is the
  // stream's); otherwise the stream waited for it (its latency is launch return -> start).
  // An event that started only after another stream's event ended, later than both its
  // stream's previous end and its launch, waited for that event (cudaStreamWaitEvent): the
  // wait, not a gap or a latency, explains its delay.
  void measure_gaps() {
    std::vector<double> gaps, latencies;
    {
      std::vector<const kineto::GpuEvent*> by_start;
      for (const Unit& u : units) by_start.insert(by_start.end(), u.events.begin(), u.events.end());
      std::stable_sort(by_start.begin(), by_start.end(),
                       [](const kineto::GpuEvent* a, const kineto::GpuEvent* b) { return a->ts < b->ts; });
      double frontier = by_start.empty() ? 0 : by_start.front()->ts;
      std::map<int64_t, double> stream_free;
      std::map<int64_t, int> per_stream;
      std::multimap<double, const kineto::GpuEvent*> ended;  // events so far, by end
      for (size_t k = 0; k < by_start.size(); ++k) {
        const kineto::GpuEvent* e = by_start[k];
        if (k > 0 && e->ts < frontier) st.overlap_s += (std::min(frontier, e->ts + e->dur) - e->ts) * 1e-6;
        Shown& sh = shown[e];
        const auto free = stream_free.find(e->stream);
        const bool first = free == stream_free.end();
        const double lo =
            std::max(first ? -std::numeric_limits<double>::infinity() : free->second, launch_end(e));
        const auto latest = ended.upper_bound(e->ts);
        if (latest != ended.begin() && std::prev(latest)->first > lo &&
            std::prev(latest)->second->stream != e->stream) {
          sh.waited = std::prev(latest)->second;
        }
        sh.queued = !first && launch_end(e) <= free->second;
        if (sh.queued) {
          sh.gap_us = std::max(0.0, e->ts - free->second);
          if (sh.waited == nullptr) gaps.push_back(sh.gap_us);
        } else {
          sh.latency_us = e->ts - launch_end(e);
          if (sh.waited == nullptr) latencies.push_back(sh.latency_us);
        }
        frontier = std::max(frontier, e->ts + e->dur);
        stream_free[e->stream] = first ? e->ts + e->dur : std::max(free->second, e->ts + e->dur);
        ended.emplace(e->ts + e->dur, e);
        if (++per_stream[e->stream] > per_stream[main_stream]) main_stream = e->stream;
      }
    }
    median_gap = median(gaps);
    median_latency = median(latencies);
  }

  // What-if: the recorded micro-batch scaled (EtImportOptions::batch_scale).
  void scale_batch_units() {
    if (options.batch_scale != 1.0) {
      if (!(options.batch_scale > 0.0 && options.batch_scale <= 1024.0)) {
        throw TraceError("trace.batch_scale: got " + std::to_string(options.batch_scale) +
                         ", expected in (0, 1024]");
      }
      for (const OpWork& w : work) {
        if ((w.kind == OpWork::Kind::attention_forward || w.kind == OpWork::Kind::attention_backward) &&
            w.modelled) {
          st.recorded_batch = w.batch;
          st.recorded_seq = w.seq;
          break;
        }
      }
      if (st.recorded_batch <= 0) {
        throw TraceError("trace.batch_scale: " + et_path +
                         " has no attention op with shapes, so the batch dimension is unknown");
      }
      const int64_t tokens = st.recorded_batch * st.recorded_seq;
      for (size_t u = 0; u < units.size(); ++u) {
        const size_t i = units[u].node;
        OpView scaled = g.nodes[i].op;
        if (!scale_batch(scaled, st.recorded_batch, tokens, options.batch_scale)) continue;
        const OpWork w2 = op_work(scaled);
        if (work[i].kind == OpWork::Kind::none || !work[i].modelled || !w2.modelled) continue;
        ++st.batch_scaled_ops;
        batch_scaled[u] = 1;
        const double before = modelled_seconds(work[i], model);
        if (units[u].filled) {
          units[u].filled_s = modelled_seconds(w2, target);
          continue;
        }
        if (before > 0) speed_ratio[u] = modelled_seconds(w2, target) / before;
        work[i] = w2;
      }
    }
  }

  // What-if: another GPU (EtImportOptions::what_if).
  void what_if_units() {
    if (options.what_if) {
      const double bandwidth_ratio = options.gpu.hbm_bytes_per_s / options.target_gpu.hbm_bytes_per_s;
      for (size_t u = 0; u < units.size(); ++u) {
        if (units[u].filled || units[u].events.empty() || batch_scaled[u]) continue;
        const OpWork& w = work[units[u].node];
        bool nccl = false;
        for (const kineto::GpuEvent* e : units[u].events) nccl = nccl || kineto::is_nccl(e->name);
        if (nccl) continue;
        if (w.kind != OpWork::Kind::none && w.modelled) {
          speed_ratio[u] = modelled_seconds(w, target) / modelled_seconds(w, model);
          ++st.what_if_model_scaled;
        } else {
          speed_ratio[u] = bandwidth_ratio;
          ++st.what_if_bandwidth_scaled;
        }
      }
    }
  }

  // Items in CPU issue order: a measured event at its launch call, a filled op at its end.
  void launch_items() {
    struct ItemRef {
      size_t unit;
      const kineto::GpuEvent* event;  // null for a filled op
      double order_us;
    };
    std::vector<ItemRef> refs;
    for (size_t u = 0; u < units.size(); ++u) {
      if (units[u].filled) {
        refs.push_back({u, nullptr, units[u].issue_us});
      } else {
        for (const kineto::GpuEvent* e : units[u].events) refs.push_back({u, e, launch_begin(e)});
      }
    }
    std::stable_sort(refs.begin(), refs.end(), [&](const ItemRef& a, const ItemRef& b) {
      if (a.order_us != b.order_us) return a.order_us < b.order_us;
      return g.nodes[units[a.unit].node].rf_id < g.nodes[units[b.unit].node].rf_id;
    });
    std::unordered_map<const kineto::GpuEvent*, int32_t> item_index;
    for (const ItemRef& r : refs) {
      LaunchItem item;
      if (r.event == nullptr) {
        item = {units[r.unit].issue_us, units[r.unit].filled_s, median_gap * 1e-6, median_latency * 1e-6};
        item.stream = main_stream;
      } else {
        const Shown& sh = shown.at(r.event);
        const bool measured_gap = sh.queued && sh.waited == nullptr;
        const bool measured_latency = !sh.queued && sh.waited == nullptr;
        item = {launch_end(r.event), r.event->dur * 1e-6 * speed_ratio[r.unit],
                (measured_gap ? sh.gap_us : median_gap) * 1e-6,
                (measured_latency ? sh.latency_us : median_latency) * 1e-6};
        item.stream = r.event->stream;
        item_index[r.event] = static_cast<int32_t>(items.size());
      }
      items.push_back(item);
      item_of.emplace_back(r.unit, r.event);
    }
    for (size_t k = 0; k < items.size(); ++k) {
      const kineto::GpuEvent* e = item_of[k].second;
      if (e == nullptr || shown.at(e).waited == nullptr) continue;
      const Shown& sh = shown.at(e);
      const auto w = item_index.find(sh.waited);
      if (w != item_index.end() && static_cast<size_t>(w->second) < k) {
        items[k].waits_for = w->second;
      } else {  // the wait cannot be replayed (not an earlier item): keep what was measured
        (sh.queued ? items[k].gap_s : items[k].latency_s) = (sh.queued ? sh.gap_us : sh.latency_us) * 1e-6;
      }
    }
  }

  void schedule() {
    CpuTimeline cpu;
    cpu.start_us = cpu_start;
    cpu.end_us = cpu_end;
    cpu.overhead = kt.overhead;
    {
      const OpOverhead per_op = op_overhead(kt, options.profiler_op_overhead_us);
      cpu.overhead.insert(cpu.overhead.end(), per_op.intervals.begin(), per_op.intervals.end());
      st.profiler_op_overhead_us = per_op.per_op_us;
      st.profiler_op_overhead_samples = per_op.samples;
      st.profiler_op_overhead_estimated = options.profiler_op_overhead_us < 0;
    }
    for (const kineto::Launch& s : kt.syncs) cpu.syncs.push_back({s.ts, s.ts + s.dur});
    sched = schedule_launches(items, cpu);
    if (!(sched.step_s <= kMaxStepSeconds)) {
      throw TraceError("trace.path: " + kineto_path + ": the modelled step lasts " +
                       std::to_string(sched.step_s) + " s, more than the hour a replayed step may");
    }
  }

  replay::StepProgram emit_program(EtImportStats* stats) {
    replay::RankProgram rank;
    rank.gpu = 0;
    std::vector<int32_t> last_instr(units.size(), -1);
    std::unordered_map<int64_t, size_t> last_writer;  // storage -> unit
    // In GPU start order; each item replays the part of its interval beyond those before it (one
    // stream: all of it), so kernels of several streams keep their modelled overlap.
    std::vector<size_t> order(items.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sched.start_s[a] < sched.start_s[b]; });
    double frontier = 0;
    for (const size_t k : order) {
      const auto [u, event] = item_of[k];
      const Unit& unit = units[u];
      const EtNode& node = g.nodes[unit.node];
      const Category cat = category_of(g, unit.node);
      const bool first = last_instr[u] < 0;
      std::vector<int32_t> deps;
      if (first) {
        std::vector<int64_t> reads, writes;
        storages(node.op, reads, writes);
        std::set<size_t> producers;
        for (const auto* list : {&reads, &writes}) {
          for (const int64_t s : *list) {
            const auto w = last_writer.find(s);
            if (w != last_writer.end() && w->second != u) producers.insert(w->second);
          }
        }
        for (const size_t p : producers) deps.push_back(last_instr[p]);
        std::sort(deps.begin(), deps.end());
        st.dependencies += static_cast<int>(deps.size());
        for (const int64_t s : writes) last_writer[s] = u;
      } else {
        deps.push_back(last_instr[u]);
      }
      const size_t before_joins = rank.instrs.size();
      deps = join_down(rank.instrs, std::move(deps), 2);
      st.joins += static_cast<int>(rank.instrs.size() - before_joins);
      const double start = sched.start_s[k];
      const double idle = start - frontier;
      if (idle > 0) {
        rank.instrs.push_back(compute_instr(idle, Category::step_end));
        st.idle_s += idle;
      }
      const double seconds = items[k].seconds;
      const double replayed = std::max(0.0, start + seconds - std::max(frontier, start));
      frontier = std::max(frontier, start + seconds);
      Instr in = compute_instr(replayed, cat);
      if (!deps.empty()) in.after = deps[0];
      if (deps.size() > 1) in.after2 = deps[1];
      const OpWork& w = work[unit.node];
      if (event != nullptr && kineto::is_nccl(event->name)) {
        in.tp_seconds = replayed;
        ++st.nccl_kernels;
      }
      if (event == nullptr) {
        st.filled_s += seconds;
      } else {
        st.measured_gpu_s += seconds;
        (event->cat == "kernel" ? st.kernels : event->cat == "gpu_memset" ? st.memsets : st.memcpys) += 1;
      }
      const bool memory_event = event != nullptr && event->cat != "kernel";
      if (!memory_event && compute_bound(w, options.gpu)) {
        st.compute_bound_s += replayed;
      } else if (memory_event || w.kind != OpWork::Kind::none) {
        st.memory_bound_s += replayed;
      } else {
        st.other_gpu_s += replayed;
      }
      (cat == Category::optimizer ? st.optimizer : cat == Category::backward ? st.backward : st.forward) += 1;
      last_instr[u] = static_cast<int32_t>(rank.instrs.size());
      rank.instrs.push_back(in);
    }
    if (sched.after_last_kernel_s > 0) {
      rank.instrs.push_back(compute_instr(sched.after_last_kernel_s, Category::step_end));
      st.idle_s += sched.after_last_kernel_s;
    }
    rank.instrs.push_back(compute_instr(0, Category::step_end));
    st.step_s = sched.step_s;
    st.gpu_gap_idle_s = sched.gpu_gap_idle_s;
    st.launch_bound_idle_s = sched.launch_bound_idle_s + sched.after_last_kernel_s;
    st.before_first_launch_s = sched.before_first_launch_s;
    st.after_last_kernel_s = sched.after_last_kernel_s;
    st.profiler_overhead_removed_s = sched.overhead_removed_s;
    st.sync_wait_s = sched.sync_wait_s;
    replay::StepProgram program;
    program.ranks.push_back(std::move(rank));
    program.steps = 1;
    if (stats != nullptr) *stats = st;
    return program;
  }
};

}  // namespace

replay::StepProgram import_pytorch_et(const std::string& kineto_path, const std::string& et_path,
                                      const EtImportOptions& options, EtImportStats* stats) {
  EtImport im(kineto_path, et_path, options);
  im.match_ops();
  im.collect_gpu_events();
  im.build_tree();
  im.issue_times();
  im.fill_units();
  im.measure_gaps();
  // What-if factor of each measured unit (EtImportOptions::what_if, batch_scale).
  im.speed_ratio.assign(im.units.size(), 1.0);
  im.batch_scaled.assign(im.units.size(), 0);
  im.scale_batch_units();
  im.what_if_units();
  im.launch_items();
  im.schedule();
  return im.emit_program(stats);
}

nlohmann::json to_json(const EtImportStats& s) {
  const double step = s.step_s > 0 ? s.step_s : 1.0;
  nlohmann::json filled = nlohmann::json::object(), not_modelled = nlohmann::json::object();
  for (const auto& [name, n] : s.filled_ops) filled[name] = n;
  for (const auto& [name, n] : s.not_modelled) not_modelled[name] = n;
  return {{"et_nodes", s.et_nodes},
          {"kineto_ops", s.kineto_ops},
          {"ops_matched", s.ops_matched},
          {"gpu_ops", s.gpu_ops},
          {"kernels", s.kernels},
          {"memsets", s.memsets},
          {"memcpys", s.memcpys},
          {"nccl_kernels", s.nccl_kernels},
          {"kernels_outside_et", s.kernels_outside_et},
          {"filled_by_compute_model", s.filled_by_compute_model},
          {"filled_ops", filled},
          {"not_modelled", not_modelled},
          {"dependencies", s.dependencies},
          {"streams", s.streams},
          {"stream_overlap_s", s.overlap_s},
          {"measured_gpu_s", s.measured_gpu_s},
          {"filled_s", s.filled_s},
          {"measured_span_s", s.measured_span_s},
          {"what_if_model_scaled", s.what_if_model_scaled},
          {"what_if_bandwidth_scaled", s.what_if_bandwidth_scaled},
          {"batch_scaled_ops", s.batch_scaled_ops},
          {"recorded_batch", s.recorded_batch},
          {"recorded_seq", s.recorded_seq},
          {"modelled_step_s", s.step_s},
          {"compute_bound_s", s.compute_bound_s},
          {"memory_bound_s", s.memory_bound_s},
          {"other_gpu_s", s.other_gpu_s},
          {"idle_s", s.idle_s},
          {"gpu_gap_idle_s", s.gpu_gap_idle_s},
          {"launch_bound_idle_s", s.launch_bound_idle_s},
          {"before_first_launch_s", s.before_first_launch_s},
          {"profiler_overhead_removed_s", s.profiler_overhead_removed_s},
          {"profiler_op_overhead",
           {{"per_op_s", s.profiler_op_overhead_us * 1e-6},
            {"source", s.profiler_op_overhead_estimated ? "estimated" : "given"},
            {"samples", s.profiler_op_overhead_samples}}},
          {"sync_wait_s", s.sync_wait_s},
          {"shares",
           {{"compute_bound", s.compute_bound_s / step},
            {"memory_bound", s.memory_bound_s / step},
            {"other_gpu", s.other_gpu_s / step},
            {"idle", s.idle_s / step}}}};
}

}  // namespace ct::trace

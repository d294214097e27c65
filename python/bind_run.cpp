#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "models/replay/block_costs.h"
#include "models/replay/step_program.h"
#include "models/scenario/drill.h"
#include "models/scenario/layouts.h"
#include "models/scenario/loader.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/nccl_tests_run.h"
#include "models/scenario/planner.h"
#include "models/scenario/rollout.h"
#include "models/scenario/runner.h"
#include "python/bindings.h"
#include "sim/units.h"

namespace py = pybind11;

namespace ct::python {
namespace {

// A numpy array that takes over the vector's buffer: a capsule frees it with the array.
template <typename T>
py::array numpy_owning(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

// One nccl-tests call: the tables as nccl-tests prints them, or (Rows) every row as JSON.
template <bool Rows>
std::string nccl_tests_call(const std::string& document_json, const std::string& overrides_json,
                            const std::string& op, const std::vector<int>& nodes,
                            const std::string& min_bytes, const std::string& max_bytes, int64_t step_factor,
                            int64_t step_bytes, const std::string& datatype, const std::string& redop,
                            const std::vector<int>& node_list) {
  const scenario::Config c = checked_config(document_json, overrides_json);
  const scenario::NcclTestsRequest q{op,         nodes,    min_bytes, max_bytes, step_factor,
                                     step_bytes, datatype, redop,     node_list};
  py::gil_scoped_release release;
  if constexpr (!Rows) {
    return scenario::nccl_tests_tables(c, q);
  } else {
    nlohmann::json rows = nlohmann::json::array();
    for (const scenario::NcclTestsTable& t : scenario::nccl_tests_run(c, q)) {
      for (const collective::NcclTestsRow& r : t.rows) {
        rows.push_back({{"nodes", t.nodes},
                        {"ranks", t.ranks},
                        {"op", op},
                        {"size_bytes", r.size_bytes},
                        {"count", r.count},
                        {"type", r.type},
                        {"redop", r.redop},
                        {"root", r.root},
                        {"time_us", r.time_us},
                        {"algbw_GBps", r.algbw_GBps},
                        {"busbw_GBps", r.busbw_GBps},
                        {"algorithm", std::string(collective::algorithm_name(r.algorithm))}});
      }
    }
    return rows.dump();
  }
}

void bind_nccl_tests(py::module_& m) {
  const auto def = [&m](const char* name, auto* fn, const char* doc) {
    m.def(name, fn, py::arg("document_json"), py::arg("overrides_json"), py::arg("op"), py::arg("nodes"),
          py::arg("min_bytes") = "8B", py::arg("max_bytes") = "8GiB", py::arg("step_factor") = 2,
          py::arg("step_bytes") = 0, py::arg("datatype") = "float", py::arg("redop") = "sum",
          py::arg("node_list") = std::vector<int>{}, doc);
  };
  def("nccl_tests", &nccl_tests_call<false>,
      "nccl-tests style tables (size, count, type, time, algbw, busbw) for each node count.");
  def("nccl_tests_rows", &nccl_tests_call<true>,
      "The nccl-tests rows of every node count as JSON (nodes, ranks, op, size_bytes, count, type, redop, "
      "root, "
      "time_us, algbw_GBps, busbw_GBps, algorithm).");
  m.def(
      "fabric_switches",
      [](const std::string& document_json, const std::string& overrides_json, const std::vector<int>& nodes) {
        const scenario::Config c = checked_config(document_json, overrides_json);
        scenario::FabricElements e;
        {
          py::gil_scoped_release release;
          e = scenario::fabric_switches_between(c, nodes);
        }
        return py::make_tuple(e.switches, e.cables);
      },
      py::arg("document_json"), py::arg("overrides_json"), py::arg("nodes"),
      "(switches, cables 'a-b'): what a collective among these nodes can cross (every shortest path between "
      "two "
      "of their NICs on the same rail), by name.");
}

// Layouts of one scenario against one build of its cluster (scenario/layouts.h): the document,
// a JSON array of override objects whose keys are all training_job.* paths, and the thread
// count; returns a JSON array with one object per layout, in order.
std::string evaluate_layouts_call(const std::string& document_json, const std::string& layouts_json,
                                  int threads) {
  const nlohmann::json doc = scenario::parse_document(document_json, scenario::Format::json);
  const nlohmann::json layouts = nlohmann::json::parse(layouts_json);
  if (!layouts.is_array()) throw scenario::ScenarioError({"layouts: expected a list of override mappings"});
  std::vector<std::string> problems;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const std::string at = "layouts[" + std::to_string(i) + "]";
    if (!layouts[i].is_object()) {
      problems.push_back(at + ": got " + layouts[i].dump() + ", expected a mapping of key path -> value");
      continue;
    }
    for (const auto& [path, value] : layouts[i].items()) {
      if (path.rfind("training_job.", 0) != 0) {
        problems.push_back(
            at + "." + path +
            ": a layout may only change training_job.* keys (the cluster, "
            "network and faults are built once for every layout); sweep the others with ct.sweep");
      }
    }
  }
  if (!problems.empty()) throw scenario::ScenarioError(std::move(problems));
  const scenario::Config base = checked_config(doc);
  std::vector<scenario::LayoutOutcome> rows;
  {
    py::gil_scoped_release release;
    rows = scenario::evaluate_layouts(
        base, layouts.size(),
        [&](size_t i) {
          nlohmann::json d = doc;
          for (const auto& [path, value] : layouts[i].items()) scenario::apply_override(d, path, value);
          return checked_config(d);
        },
        threads);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const scenario::LayoutOutcome& o : rows) {
    nlohmann::json row = {{"error", o.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.error)},
                          {"gpus", o.gpus},
                          {"fits", o.fits},
                          {"peak_memory_gib", static_cast<double>(o.peak_memory_bytes) / 1073741824.0},
                          {"events", o.events}};
    if (o.error.empty()) {
      row.update({{"step_time_s", o.step_time_s},
                  {"mfu", o.mfu},
                  {"hfu", o.hfu},
                  {"tflops_per_gpu", o.tflops_per_gpu},
                  {"tokens_per_s", o.tokens_per_s},
                  {"tokens_per_s_per_gpu", o.tokens_per_s_per_gpu}});
      row.update(scenario::breakdown_json(o.breakdown));
    }
    out.push_back(std::move(row));
  }
  return out.dump();
}

void bind_layer_kernels(py::module_& m) {
  m.def(
      "layer_kernels",
      [](const std::string& document_json, const std::string& overrides_json) {
        const scenario::Config c = checked_config(document_json, overrides_json);
        const workload::JobSpec job = scenario::job_spec(c);
        const network::ClusterSpec cluster = scenario::cluster_spec(c);
        const hardware::ComputeModel compute = replay::step_compute_model(job, cluster.node);
        nlohmann::json out = nlohmann::json::array();
        for (const replay::KernelTime& k : replay::layer_kernel_times(job, compute)) {
          out.push_back({{"layer", k.layer},
                         {"pass", k.pass},
                         {"name", k.name},
                         {"kind", k.kind},
                         {"flops", k.flops},
                         {"bytes", k.bytes},
                         {"seconds", k.seconds}});
        }
        return out.dump();
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}",
      "Every kernel of one transformer layer, the output layer and the embedding (per micro-batch and TP "
      "rank) as the step model times it: JSON text, a list of {layer, pass, name, kind, flops, bytes, "
      "seconds}.");
}

}  // namespace

void bind_run(py::module_& m) {
  m.def(
      "evaluate_layouts", &evaluate_layouts_call, py::arg("document_json"), py::arg("layouts_json"),
      py::arg("threads") = 0,
      "Layouts (a JSON list of training_job.* override objects) of one scenario against one build of its "
      "cluster, in parallel (threads <= 0: all cores); the GIL is released. Returns a JSON list, one row per "
      "layout in order: error (null when it ran), gpus, fits, peak_memory_gib, events and the step figures.");
  m.def(
      "run",
      [](const std::string& document_json, const std::string& overrides_json, const std::string& trace_path,
         bool column_tables, const std::vector<int>& trace_gpus) {
        scenario::Config c = checked_config(document_json, overrides_json);
        scenario::RunOptions options;
        options.trace_path = trace_path;
        options.trace_gpus = trace_gpus;
        std::map<std::string, scenario::ColumnTable> tables;
        if (column_tables) options.tables = &tables;
        std::string report;
        {
          py::gil_scoped_release release;
          report = scenario::run(c, options).dump();
        }
        py::dict arrays;
        for (auto& [name, columns] : tables) {
          py::dict table;
          for (auto& [column, data] : columns) {
            table[py::str(column)] = std::visit([](auto& v) { return numpy_owning(std::move(v)); }, data);
          }
          arrays[py::str(name)] = table;
        }
        return py::make_tuple(report, arrays);
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}", py::arg("trace_path") = "",
      py::arg("column_tables") = true, py::arg("trace_gpus") = std::vector<int>{},
      "Runs a scenario (the GIL is released while it runs); returns (report as JSON text, {table: {column: "
      "numpy array}}), the arrays owning the C++ buffers (no copy). trace_gpus: the GPUs the Chrome trace "
      "and "
      "the timeline show (empty: one per pipeline stage and the first TP group).");
  bind_layer_kernels(m);
  m.def(
      "timeline_codes",
      [] {
        auto names = [](const auto& list) {
          std::vector<std::string> out;
          for (const char* n : list) out.emplace_back(n);
          return out;
        };
        py::dict d;
        d["stream"] = names(replay::kStreamNames);
        d["kind"] = names(replay::kInstrKindNames);
        d["category"] = names(replay::kCategoryNames);
        return d;
      },
      "Names of the timeline table's codes: {'stream': [...], 'kind': [...], 'category': [...]} in code "
      "order.");
  bind_nccl_tests(m);
  m.def(
      "rollout",
      [](const std::string& document_json, const std::string& overrides_json) {
        scenario::Config c = checked_config(document_json, overrides_json);
        py::gil_scoped_release release;
        return scenario::rollout(c).dump();
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}",
      "Staged rollout (one replica, rail group, pod, whole job): scaling linearity; JSON text.");
  m.def(
      "drill",
      [](const std::string& document_json, const std::string& overrides_json, int node, const std::string& at,
         bool hang) {
        scenario::Config c = checked_config(document_json, overrides_json);
        scenario::DrillOptions o;
        o.node = node;
        o.hang = hang;
        try {
          o.at_s = sim::parse_duration_seconds(at);
        } catch (const std::exception& e) {
          throw scenario::ScenarioError(
              {"--at: got '" + at + "', expected a duration such as 30s or 2h (" + e.what() + ")"});
        }
        py::gil_scoped_release release;
        return scenario::drill(c, o).dump();
      },
      py::arg("document_json"), py::arg("overrides_json"), py::arg("node"), py::arg("at"),
      py::arg("hang") = false,
      "The kill-a-node drill: the job's timeline from the kill to steady throughput; JSON text.");
  m.def(
      "plan",
      [](double params, double tokens, double days, const std::string& gpu, const std::string& model_json,
         int seq, double batch_tokens, double pue, int threads, const py::object& progress) {
        scenario::PlanRequest r;
        r.params = params;
        r.tokens = tokens;
        r.days = days;
        r.gpu = gpu;
        if (!model_json.empty()) r.model = scenario::parse_document(model_json, scenario::Format::json);
        r.seq_length = seq;
        r.batch_tokens = batch_tokens;
        r.pue = pue;
        r.threads = threads;
        if (!progress.is_none()) {
          r.progress = [progress](int done, int total) {
            py::gil_scoped_acquire hold;
            progress(done, total);
          };
        }
        py::gil_scoped_release release;
        return scenario::plan(r).dump();
      },
      py::arg("params"), py::arg("tokens"), py::arg("days"), py::arg("gpu") = "H100-SXM",
      py::arg("model_json") = "", py::arg("seq") = 0, py::arg("batch_tokens") = 4e6, py::arg("pue") = 0.0,
      py::arg("threads") = 0, py::arg("progress") = py::none(),
      "Cluster size at optimistic/base/conservative MFU and the best layout of the model (model_json: "
      "training_job.model keys, a preset allowed; empty = the shape nearest params); JSON text. "
      "progress(done, "
      "total) is called after each block of layouts.");
}

}  // namespace ct::python

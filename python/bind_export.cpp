// Export of a scenario's generated training step: the step program `run` replays (built
// unfolded: every rank has its own file), written as Chakra execution traces.
#include <nlohmann/json.hpp>

#include "models/replay/step_model.h"
#include "models/scenario/loader.h"
#include "models/scenario/machine_memory.h"
#include "models/scenario/runner.h"
#include "models/trace/chakra_export.h"
#include "models/trace/trace_import.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace ct::python {

void bind_export(py::module_& m) {
  m.def(
      "export_chakra",
      [](const std::string& document_json, const std::string& overrides_json, const std::string& out_dir) {
        const scenario::Config c = checked_config(document_json, overrides_json);
        if (!c.has("training_job")) {
          throw scenario::ScenarioError(
              {"export: the scenario has no training_job; only generated training steps "
               "are exported (a trace is already a trace)"});
        }
        replay::StepInput in = scenario::step_input(c);
        in.program.fold = false;
        in.program.fold_rails = false;
        const double need = replay::estimate_program_bytes(in.job, in.program);
        const double have = scenario::available_memory_bytes();
        if (have > 0 && need > 0.8 * have) {
          throw scenario::ScenarioError({"export: the step program of every rank needs about " +
                                         std::to_string(need / 1073741824.0) + " GiB; this machine has " +
                                         std::to_string(have / 1073741824.0) +
                                         " GiB available. Use fewer training_job.steps or a smaller job"});
        }
        trace::ChakraExportOptions options;
        options.name = c.name.empty() ? "trace" : c.name;
        trace::ChakraExportResult r;
        {
          py::gil_scoped_release release;
          try {
            r = trace::export_chakra(replay::build_program(in), out_dir, options);
          } catch (const trace::TraceError& e) {
            throw scenario::ScenarioError({e.what()});
          }
        }
        const nlohmann::json out = {{"directory", r.directory},
                                    {"name", r.name},
                                    {"files", r.files},
                                    {"comm_group_file", r.comm_group_file},
                                    {"ranks", r.ranks},
                                    {"steps", r.steps},
                                    {"nodes", r.nodes},
                                    {"computes", r.computes},
                                    {"sends", r.sends},
                                    {"recvs", r.recvs},
                                    {"collectives", r.collectives},
                                    {"process_groups", r.process_groups},
                                    {"bytes", r.bytes}};
        return out.dump();
      },
      py::arg("document_json"), py::arg("overrides_json"), py::arg("out_dir"),
      "Writes the scenario's step program as Chakra ET (<name>.<rank>.et per rank, comm_group.json) "
      "into out_dir; returns a JSON summary (files, ranks, nodes by type, bytes).");
}

}  // namespace ct::python

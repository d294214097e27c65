#include "models/scenario/loader.h"
#include "models/scenario/runner.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace ct::python {

void bind_run(py::module_& m) {
  m.def(
      "run",
      [](const std::string& document_json, const std::string& overrides_json, const std::string& trace_path) {
        scenario::Config c = checked_config(document_json, overrides_json);
        scenario::RunOptions options;
        options.trace_path = trace_path;
        std::string report;
        {
          py::gil_scoped_release release;
          report = scenario::run(c, options).dump();
        }
        return report;
      },
      py::arg("document_json"), py::arg("overrides_json") = "{}", py::arg("trace_path") = "",
      "Runs a scenario (the GIL is released while it runs); returns the report as JSON text.");
}

}  // namespace ct::python

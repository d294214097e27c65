// calibrate: kernel samples of a profiled step -> fitted compute model -> GPU file
// (models/trace/calibrate.h). Errors come out as RuntimeError with the file named.
#include "models/trace/calibrate.h"
#include "models/trace/gpu_file.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace ct::python {

void bind_calibrate(py::module_& m) {
  m.def(
      "calibrate",
      [](const std::string& trace, const std::string& out, const std::string& gpu,
         const std::string& execution_trace) {
        trace::CalibrateOptions options;
        options.gpu = gpu;
        options.execution_trace = execution_trace;
        nlohmann::json summary;
        {
          py::gil_scoped_release release;
          const trace::CalibrateResult r = trace::calibrate(trace, options);
          if (!out.empty()) trace::write_gpu_file(out, r.file);
          summary = trace::gpu_file_json(r.file);
          summary["out"] = out;
          summary["wall_s"] = r.wall_s;
        }
        return summary.dump();
      },
      py::arg("trace"), py::arg("out") = "", py::arg("gpu") = "", py::arg("execution_trace") = "",
      "Fits the compute model to the kernels of a Kineto trace (shapes from the execution trace when given), "
      "writes the GPU file to `out` when given; returns the file's content plus wall_s as JSON text.");
}

}  // namespace ct::python

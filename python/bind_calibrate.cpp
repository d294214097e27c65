// calibrate: kernel samples of a profiled step -> fitted compute model -> GPU file
// (models/trace/calibrate.h). Errors come out as RuntimeError with the file named.
#include "models/hardware/compute_model.h"
#include "models/hardware/gpu_catalog.h"
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
  m.def(
      "gemm_seconds",
      [](const std::string& gpu, int64_t m_, int64_t n, int64_t k, int64_t count, bool fp8) {
        const hardware::ComputeModel model(hardware::gpu(gpu), hardware::Calibration::h200());
        return model.gemm_time(m_, n, k, count, fp8).seconds();
      },
      py::arg("gpu"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("count") = 1, py::arg("fp8") = false,
      "The compute model's time of C[m,n] = A[m,k] B[k,n] (count problems in one launch) on a catalog GPU, "
      "with the built-in H200 calibration scaled to that GPU (the accuracy command's kernel set).");
}

}  // namespace ct::python

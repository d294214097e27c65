// ct_fit_compute [calibration.json]: fits the compute model to measured kernels, prints the
// fitted parameters (as the C++ of calibration_h200.cpp) and the error table of the fit and of
// the committed Calibration::h200(). Run from the repository root.
#include <cstdio>
#include <exception>
#include <string>

#include "models/hardware/compute_fit.h"
#include "models/hardware/compute_model.h"
#include "models/hardware/gpu_catalog.h"
#include "models/hardware/kernel_data.h"

int main(int argc, char** argv) {
  using namespace ct::hardware;
  const std::string path = argc > 1 ? argv[1] : "models/hardware/data/h200-kernels.json";
  try {
    const KernelMeasurements data = load_kernel_measurements(path);
    const GpuSpec& h200 = gpu("H200-SXM");
    const Calibration fitted = fit_calibration(data, h200);
    const ComputeModel model(h200, fitted);
    const FitObjectives obj = fit_objectives(model, data);
    std::printf("# %s (%s): %zu GEMMs, %zu attention shapes, %zu element-wise\n\n", path.c_str(),
                data.device.c_str(), data.gemm.size(), data.attention.size(), data.elementwise.size());
    std::printf("## Fitted parameters (paste into calibration_h200.cpp)\n\n%s\n",
                format_calibration(fitted).c_str());
    std::printf(
        "Mean squared log error on the fit set: gemm %.6g, attention %.6g, "
        "elementwise %.6g\n\n",
        obj.gemm, obj.attention, obj.elementwise);
    std::printf("## Errors of the fitted model\n\n%s\n",
                format_error_table(evaluate_errors(model, data)).c_str());
    const ComputeModel committed(h200, Calibration::h200());
    std::printf("## Errors of the committed Calibration::h200()\n\n%s\n",
                format_error_table(evaluate_errors(committed, data)).c_str());
    const double stream_bw = h200.hbm_bytes_per_s * fitted.elementwise.streaming.eff;
    std::printf("Asymptotic streaming bandwidth %.0f GB/s; measured device copy %.0f GB/s\n\n",
                stream_bw * 1e-9, data.hbm_copy_bytes_per_s * 1e-9);
    std::printf("## Per-entry GEMM (M N K measured_us model_us err%% holdout)\n\n");
    for (std::size_t i = 0; i < data.gemm.size(); ++i) {
      const GemmSample& g = data.gemm[i];
      const double t = model.gemm_time(g.m, g.n, g.k).seconds();
      std::printf("%6lld %6lld %6lld %10.1f %10.1f %+6.1f%% %s\n", static_cast<long long>(g.m),
                  static_cast<long long>(g.n), static_cast<long long>(g.k), g.seconds * 1e6, t * 1e6,
                  100.0 * (t - g.seconds) / g.seconds, is_held_out(i) ? "H" : "");
    }
    std::printf("\n## Per-entry attention (b h s d fwd_us model fwdbwd_us model holdout)\n\n");
    for (std::size_t i = 0; i < data.attention.size(); ++i) {
      const AttentionSample& a = data.attention[i];
      const double f =
          model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward).seconds();
      const double fb =
          model.attention_time(a.batch, a.heads, a.seq, a.head_dim, true, AttentionPass::forward_backward)
              .seconds();
      std::printf("%3lld %3lld %6lld %4lld %9.1f %9.1f %9.1f %9.1f %s\n", static_cast<long long>(a.batch),
                  static_cast<long long>(a.heads), static_cast<long long>(a.seq),
                  static_cast<long long>(a.head_dim), a.fwd_seconds * 1e6, f * 1e6, a.fwdbwd_seconds * 1e6,
                  fb * 1e6, is_held_out(i) ? "H" : "");
    }
    std::printf("\n## Per-entry element-wise (op elements measured_us model_us holdout)\n\n");
    for (std::size_t i = 0; i < data.elementwise.size(); ++i) {
      const ElementwiseSample& e = data.elementwise[i];
      const double t = model.elementwise_time(ct::sim::Bytes{e.bytes_moved}, e.op_class).seconds();
      std::printf("%-10s %10lld %9.1f %9.1f %s\n", e.op.c_str(), static_cast<long long>(e.elements),
                  e.seconds * 1e6, t * 1e6, is_held_out(i) ? "H" : "");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ct_fit_compute: %s\n", e.what());
    return 1;
  }
  return 0;
}

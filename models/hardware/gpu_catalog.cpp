#include "models/hardware/gpu_catalog.h"

#include <cmath>
#include <stdexcept>

namespace ct::hardware {
namespace {

constexpr double kGiB = 1073741824.0;

// Sources (vendor datasheets; "GB" of HBM capacity is taken as GiB, which is what the
// devices report: 80 GB A100/H100 show 81920/81559 MiB, and the calibration H200 reports
// 150.1e9 bytes usable against 141 GiB = 151.4e9):
//   A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4): BF16 312 TFLOPS dense (624 sparse),
//         HBM2 1,555 GB/s (40GB) and HBM2e 2,039 GB/s (80GB), NVLink 600 GB/s bidirectional,
//         400 W, 108 SMs, 1410 MHz boost (A100 whitepaper). No FP8 tensor cores: fp8 = bf16 rate.
//   H100 SXM: NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS sparse (989.4 dense),
//         FP8 3,958 sparse (1,979 dense), 80 GB HBM3 3.35 TB/s, NVLink 900 GB/s bidirectional,
//         up to 700 W; 132 SMs, 1980 MHz max boost (H100 whitepaper / nvidia-smi).
//   H800 SXM: as H100 SXM with NVLink 400 GB/s bidirectional (NVIDIA H800 product brief).
//   H200 SXM: NVIDIA H200 datasheet: compute as H100 SXM, 141 GB HBM3e, 4.8 TB/s, NVLink
//         900 GB/s bidirectional, up to 700 W; 132 SMs, 1980 MHz (calibration file "about").
//   B200: NVIDIA DGX/HGX B200 datasheets: FP16/BF16 4.5 PFLOPS sparse (2.25 dense), FP8 9 PFLOPS
//         sparse (4.5 dense), 180 GB HBM3e per GPU in HGX/DGX B200 (192 GB physical), 8 TB/s,
//         NVLink 5 1.8 TB/s bidirectional, 1000 W; 148 SMs. The 1.98 GHz boost clock is from
//         third-party spec tables (not in the NVIDIA datasheet).
// FP8 GEMMs (fp8_gemm_ratio): best-shape torch.matmul throughput from the MAMF table
// (stas00/ml-engineering, tests/validation is not involved): H100 SXM bf16 794.5 of 989,
// fp8_e4m3 1402.6 of 1979 TFLOP/s -> (1402.6/1979) / (794.5/989) = 0.882; B200 SXM bf16 1745
// of 2250, fp8 3432.5 of 4500 -> 0.983. H800 and H200 share H100's die: its ratio, flagged as
// carried over. A100 has no FP8 tensor cores.
const std::vector<GpuSpec>& catalog() {
  static const std::vector<GpuSpec> specs = {
      {"A100-40GB", 312e12, 312e12, 40 * kGiB, 1.555e12, 300e9, 400.0, 108, 1.41e9, 0.0, false},
      {"A100-80GB", 312e12, 312e12, 80 * kGiB, 2.039e12, 300e9, 400.0, 108, 1.41e9, 0.0, false},
      {"H100-SXM", 989.4e12, 1979e12, 80 * kGiB, 3.35e12, 450e9, 700.0, 132, 1.98e9, 0.882, false},
      {"H800", 989.4e12, 1979e12, 80 * kGiB, 3.35e12, 200e9, 700.0, 132, 1.98e9, 0.882, true},
      {"H200-SXM", 989.4e12, 1979e12, 141 * kGiB, 4.8e12, 450e9, 700.0, 132, 1.98e9, 0.882, true},
      {"B200", 2.25e15, 4.5e15, 180 * kGiB, 8e12, 900e9, 1000.0, 148, 1.98e9, 0.983, false},
  };
  return specs;
}

void require_positive(double value, const char* field, const std::string& gpu_name) {
  if (!std::isfinite(value) || value <= 0.0) {
    throw std::invalid_argument("GpuSpec '" + gpu_name + "': " + field +
                                " must be a finite positive number, got " +
                                std::to_string(value));
  }
}

}  // namespace

void validate(const GpuSpec& spec) {
  if (spec.name.empty()) throw std::invalid_argument("GpuSpec: name must not be empty");
  require_positive(spec.bf16_dense_flops, "bf16_dense_flops", spec.name);
  require_positive(spec.fp8_dense_flops, "fp8_dense_flops", spec.name);
  require_positive(spec.hbm_bytes, "hbm_bytes", spec.name);
  require_positive(spec.hbm_bytes_per_s, "hbm_bytes_per_s", spec.name);
  require_positive(spec.nvlink_bytes_per_s, "nvlink_bytes_per_s", spec.name);
  require_positive(spec.tdp_watts, "tdp_watts", spec.name);
  if (spec.sm_count <= 0) {
    throw std::invalid_argument("GpuSpec '" + spec.name + "': sm_count must be positive, got " +
                                std::to_string(spec.sm_count));
  }
  require_positive(spec.sm_clock_hz, "sm_clock_hz", spec.name);
}

GpuSpec custom_gpu(std::string name, double bf16_dense_flops, double fp8_dense_flops,
                   double hbm_bytes, double hbm_bytes_per_s, double nvlink_bytes_per_s,
                   double tdp_watts, int sm_count, double sm_clock_hz) {
  GpuSpec spec{std::move(name), bf16_dense_flops, fp8_dense_flops, hbm_bytes, hbm_bytes_per_s,
               nvlink_bytes_per_s, tdp_watts, sm_count, sm_clock_hz,
               fp8_dense_flops > bf16_dense_flops ? 1.0 : 0.0, fp8_dense_flops > bf16_dense_flops};
  validate(spec);
  return spec;
}

const GpuSpec* find_gpu(std::string_view name) {
  for (const GpuSpec& spec : catalog()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const GpuSpec& gpu(std::string_view name) {
  if (const GpuSpec* spec = find_gpu(name)) return *spec;
  std::string known;
  for (const GpuSpec& spec : catalog()) known += (known.empty() ? "" : ", ") + spec.name;
  throw std::invalid_argument("unknown GPU '" + std::string(name) + "'; known: " + known);
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  names.reserve(catalog().size());
  for (const GpuSpec& spec : catalog()) names.push_back(spec.name);
  return names;
}

}  // namespace ct::hardware

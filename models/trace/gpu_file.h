// GPU file: a catalog GPU and the compute-model parameters fitted to its measured kernels,
// written by `clustertwin calibrate` and read through the scenario key cluster.gpu_file.
//
//   {"format": "clustertwin-gpu", "version": 1,
//    "base_gpu": "H200-SXM",                        the catalog entry the fit used (peaks, SMs)
//    "calibration": {"gemm": {launch_s, overlap_p, eff_max, k_half, wave_gamma,
//                             throttle_flops, throttle_delta, mem_eff, tile_m, tile_n},
//                    "attention": {launch_s, overlap_p, fwd_eff_max, fwd_seq_half,
//                                  bwd_eff_max, bwd_seq_half},
//                    "elementwise": {overlap_p, streaming: {launch_s, eff},
//                                    normalization: {...}, softmax: {...}}},
//    "fit": {...},  "provenance": {...}}       informative, kept as written
// Every calibration field is required (compute_model.h names them); the values must pass
// hardware::validate. Errors are TraceErrors "<key>: <path>: <what>", naming the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "models/hardware/compute_model.h"

namespace ct::trace {

constexpr int kGpuFileVersion = 1;

struct GpuFile {
  std::string base_gpu;
  hardware::Calibration calibration;
  nlohmann::json fit = nlohmann::json::object();
  nlohmann::json provenance = nlohmann::json::object();
};

nlohmann::json calibration_json(const hardware::Calibration& cal);
nlohmann::json gpu_file_json(const GpuFile& file);

// Writes the file (pretty-printed JSON); throws TraceError "<path>: cannot write".
void write_gpu_file(const std::string& path, const GpuFile& file);

// Reads and checks it: format and version, a base GPU in the catalog, every calibration field.
GpuFile read_gpu_file(const std::string& path, const std::string& key = "cluster.gpu_file");

}  // namespace ct::trace

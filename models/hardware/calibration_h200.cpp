// Calibration::h200(): constants printed by ct_fit_compute on data/h200-kernels.json
// (fit set = entries not held out; see compute_fit.h). Regenerate with
//   ./build-hw/models/hardware/ct_fit_compute
// and paste the "Fitted parameters" block here; test_compute_fit checks they still match.
#include "models/hardware/compute_model.h"

namespace ct::hardware {

Calibration Calibration::h200() {
  Calibration c;
  c.gemm.launch_s = 2.3663747548574455e-05;
  c.gemm.overlap_p = 5.6890259872103011;
  c.gemm.eff_max = 0.82084493894736554;
  c.gemm.k_half = 311.25159501938839;
  c.gemm.wave_gamma = 0.22605795225905564;
  c.gemm.throttle_flops = 632425846837.13477;
  c.gemm.throttle_delta = 0.15794451563028314;
  c.gemm.mem_eff = 0.75908847026010384;
  c.gemm.tile_m = 128;
  c.gemm.tile_n = 128;
  c.attention.launch_s = 3.2488071240966439e-05;
  c.attention.overlap_p = 1.0000000536512954;
  c.attention.fwd_eff_max = 0.64836717220963547;
  c.attention.fwd_seq_half = 152.35804899983182;
  c.attention.bwd_eff_max = 0.62737699241467226;
  c.attention.bwd_seq_half = 1620.4566065922506;
  c.elementwise.overlap_p = 1.7365097255463104;
  c.elementwise.streaming = {1.0326093519420551e-05, 0.76078819884582305};
  c.elementwise.normalization = {2.7060787616873544e-05, 0.59231030648278526};
  c.elementwise.softmax = {1.8851492283553453e-05, 0.2663815093661504};
  return c;
}

}  // namespace ct::hardware

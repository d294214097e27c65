#include "python/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "ClusterTwin engine bindings (use the `clustertwin` package, not this module).";
  ct::python::bind_scenario(m);
  ct::python::bind_run(m);
  ct::python::bind_calibrate(m);
  ct::python::bind_export(m);
}

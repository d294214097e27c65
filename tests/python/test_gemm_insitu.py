"""tools/gemm_insitu.py: the in-situ GEMM check quoted in models/hardware/README.md."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_h200_step_gemms_against_the_kernel_model():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gemm_insitu.py")], capture_output=True,
                         text=True, check=True).stdout
    first = out.splitlines()[0]
    # The figures the README quotes: 291 kernels, 163.5 ms measured, 184.5 ms modelled (+12.8%).
    assert first.startswith("291 GEMM kernels: measured 163.5 ms, model 184.5 ms (+12.8%)"), first

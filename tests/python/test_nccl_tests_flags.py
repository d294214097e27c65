"""nccl-tests parity: -f / -i size steps, -d data types, -o reductions, the DataFrame API."""
import os
import subprocess

import pytest

import clustertwin as ct

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAUNCHER = os.path.join(ROOT, "clustertwin")
SC = os.path.join(ROOT, "scenarios", "default.json")
FAST = {"network.mode": "analytical"}


def test_step_factor_and_step_bytes_give_the_sizes_nccl_tests_gives():
    df = ct.nccl_tests(SC, nodes=2, minbytes="1M", maxbytes="64M", stepfactor=4, overrides=FAST)
    assert list(df["size_bytes"]) == [1 << 20, 4 << 20, 16 << 20, 64 << 20]
    df = ct.nccl_tests(SC, nodes=2, minbytes="1M", maxbytes="4M", stepbytes="1M", overrides=FAST)
    assert list(df["size_bytes"]) == [1 << 20, 2 << 20, 3 << 20, 4 << 20]
    # a size past maxbytes is never run, as in nccl-tests' loop
    df = ct.nccl_tests(SC, nodes=2, minbytes="3M", maxbytes="10M", stepfactor=3, overrides=FAST)
    assert list(df["size_bytes"]) == [3 << 20, 9 << 20]


def test_datatype_and_redop_change_counts_and_columns_not_times():
    base = ct.nccl_tests(SC, nodes=[2, 4], minbytes="64K", maxbytes="16M", overrides=FAST)
    bf16 = ct.nccl_tests(SC, nodes=[2, 4], minbytes="64K", maxbytes="16M", datatype="bfloat16", redop="max",
                         overrides=FAST)
    assert (bf16["count"] == base["size_bytes"] // 2).all() and (base["count"] == base["size_bytes"] // 4).all()
    assert set(bf16["type"]) == {"bfloat16"} and set(bf16["redop"]) == {"max"} and set(base["redop"]) == {"sum"}
    assert list(bf16["time_us"]) == list(base["time_us"])
    assert sorted(set(base["nodes"])) == [2, 4] and set(base["ranks"]) == {16, 32}
    gather = ct.nccl_tests(SC, op="all_gather", nodes=2, minbytes="1M", maxbytes="1M", datatype="int8",
                           redop="min", overrides=FAST)
    assert list(gather["redop"]) == ["none"] and list(gather["count"]) == [1 << 20]


def test_dataframe_matches_the_printed_table():
    df = ct.nccl_tests(SC, nodes=2, minbytes="8M", maxbytes="32M", overrides=FAST)
    out = subprocess.run([LAUNCHER, "nccl-tests", SC, "--nodes", "2", "-b", "8M", "-e", "32M", "--set",
                          "network.mode=analytical"], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    assert [int(r[0]) for r in rows] == list(df["size_bytes"])
    assert [float(r[7]) for r in rows] == pytest.approx(list(df["busbw_GBps"]), abs=0.006)
    assert "step: 2(factor)" in out


def test_cli_flags_and_errors():
    out = subprocess.run([LAUNCHER, "nccl-tests", SC, "--nodes", "2", "-b", "1M", "-e", "3M", "-i", "1M", "-d", "half",
                          "-o", "prod", "--set", "network.mode=analytical"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "step: 1048576(bytes)" in out.stdout and "half" in out.stdout and "prod" in out.stdout
    bad = subprocess.run([LAUNCHER, "nccl-tests", SC, "-d", "float9", "-o", "xor"], capture_output=True, text=True)
    assert bad.returncode == 2 and "-d (--datatype): got 'float9'" in bad.stderr
    assert "-o (--redop): got 'xor'" in bad.stderr and "Traceback" not in bad.stderr
    many = subprocess.run([LAUNCHER, "nccl-tests", SC, "-b", "8", "-e", "8G", "-i", "1"], capture_output=True, text=True)
    assert many.returncode == 2 and "more than 4096 sizes" in many.stderr
    one = subprocess.run([LAUNCHER, "nccl-tests", SC, "-f", "1"], capture_output=True, text=True)
    assert one.returncode == 2 and "stepfactor: got 1" in one.stderr

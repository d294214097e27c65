"""run --out DIR writes DIR/metrics.om: OpenMetrics text that Debian's prometheus-client parses
and promtool backfills into a TSDB, with the values of the report."""
import json
import os
import re
import shutil
import subprocess

import pytest

from clustertwin.metrics import DEFAULT_START_UNIX, METRICS

CLI = ["./clustertwin"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "scenarios", "default.json")
SMALL = ["--set", "network.mode=analytical", "--set", "campaign.duration=6h", "--set", "campaign.repeats=1"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    subprocess.run(CLI + ["run", DEFAULT, "--quiet", "--out", str(out), "--metrics-interval", "30s"] + SMALL,
                   check=True, capture_output=True, text=True)
    return out


def test_metrics_file_parses_and_carries_the_reports_values(run_dir):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    text = (run_dir / "metrics.om").read_text()
    assert text.endswith("# EOF\n")
    report = json.loads((run_dir / "report.json").read_text())
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) <= set(METRICS) and "clustertwin_it_power_watts" in families
    power = families["clustertwin_it_power_watts"].samples
    assert len(power) == 6 * 3600 // 30 + 1 and power[0].timestamp.sec == DEFAULT_START_UNIX
    phases = report["tables"]["campaign_phases"]
    assert power[0].value == pytest.approx(phases[0]["it_w"], rel=1e-8)
    steps = {s.labels["gpu"]: s.value for s in families["clustertwin_step_time_seconds"].samples}
    assert steps == {str(r["gpu"]): pytest.approx(r["step_time_s"], rel=1e-8) for r in report["tables"]["ranks"]}
    saves = families["clustertwin_checkpoint_saves"].samples
    assert saves[-1].name == "clustertwin_checkpoint_saves_total" and saves[-1].value >= 1
    values = [s.value for s in saves]
    assert values == sorted(values)  # a counter never goes down
    train = [s for s in families["clustertwin_job_phase"].samples if s.labels["phase"] == "train"]
    tokens = families["clustertwin_tokens_per_second"].samples
    assert all((t.value > 0) == (p.value == 1) for t, p in zip(tokens, train))


def test_promtool_backfills_it_and_the_tsdb_holds_a_known_value(run_dir, tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: tools/setup.sh installs Debian's prometheus package"
    tsdb = tmp_path / "tsdb"
    made = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(run_dir / "metrics.om"),
                           str(tsdb)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr + made.stdout
    (tsdb / "wal").mkdir()  # promtool 2.42's dump opens the write-ahead log, which a backfill does not write
    dump = subprocess.run([promtool, "tsdb", "dump", str(tsdb)], capture_output=True, text=True, check=True).stdout
    report = json.loads((run_dir / "report.json").read_text())
    first_w = report["tables"]["campaign_phases"][0]["it_w"]
    line = next(ln for ln in dump.splitlines()
                if "clustertwin_it_power_watts" in ln and ln.rstrip().endswith(f" {DEFAULT_START_UNIX * 1000}"))
    assert float(re.split(r"\s+", line.strip())[-2]) == pytest.approx(first_w, rel=1e-8)


def test_same_scenario_same_metrics_and_bad_intervals_are_errors(run_dir, tmp_path):
    again = tmp_path / "again"
    subprocess.run(CLI + ["run", DEFAULT, "--quiet", "--out", str(again), "--metrics-interval", "30s"] + SMALL,
                   check=True, capture_output=True, text=True)
    assert (again / "metrics.om").read_bytes() == (run_dir / "metrics.om").read_bytes()
    bad = subprocess.run(CLI + ["run", DEFAULT, "--quiet", "--out", str(tmp_path / "b"), "--metrics-interval",
                                "-3s"] + SMALL, capture_output=True, text=True)
    assert bad.returncode == 2 and "--metrics-interval" in bad.stderr
    huge = subprocess.run(CLI + ["run", DEFAULT, "--quiet", "--out", str(tmp_path / "h"), "--metrics-interval",
                                 "1ms"] + SMALL, capture_output=True, text=True)
    assert huge.returncode == 2 and "coarser --metrics-interval" in huge.stderr


def test_dashboard_uses_only_exported_metric_names():
    with open(os.path.join(ROOT, "tools", "grafana", "clustertwin-dashboard.json")) as f:
        dash = json.load(f)
    names = set()
    for panel in dash["panels"]:
        for target in panel["targets"]:
            names |= set(re.findall(r"clustertwin_[a-z_]+", target["expr"]))
    exported = set(METRICS) | {m + "_total" for m, (kind, _, _) in METRICS.items() if kind == "counter"}
    assert names and names <= exported, names - exported

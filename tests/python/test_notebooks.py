"""Executes every notebook under notebooks/ (nbclient, kernel python3 from ipykernel); any error fails."""
import os
import pathlib
import time

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    # The kernel inherits this environment: an absolute PYTHONPATH (the first cell also finds
    # python/ itself) and a non-interactive matplotlib.
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "python"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError on the first failing cell
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")  # reported, never asserted (machines are noisy)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, "the notebook's figures were not displayed"


def test_result_tables_and_trace_copy(tmp_path):
    """Result.breakdown / .collectives are the frames helpers; to_chrome_trace copies, never reruns."""
    import clustertwin as ct
    from clustertwin import frames

    sc = ct.load(ROOT / "scenarios" / "default.json")
    r = ct.run(sc, overrides={"network.mode": "analytical"}, trace=str(tmp_path / "trace.json"))
    assert r.breakdown.equals(frames.breakdown_frame(r))
    assert r.collectives.equals(frames.collectives_frame(r)) and len(r.collectives) > 0
    out = r.to_chrome_trace(tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == (tmp_path / "trace.json").read_bytes()
    assert out == str(tmp_path / "copy.json")
    with pytest.raises(ValueError):
        ct.run(sc, overrides={"network.mode": "analytical"}).to_chrome_trace(tmp_path / "none.json")


def test_heatmap_and_pareto_scatter():
    import pandas as pd
    from clustertwin import frames, plots

    df = pd.DataFrame({"tp": [1, 1, 2, 2], "pp": [1, 2, 1, 2], "mfu": [None, 0.4, 0.5, 0.45],
                       "memory.fits": [False, True, True, True], "error": [None] * 4})
    df.attrs["grid"] = ["tp", "pp"]
    fig = plots.heatmap(df, "tp", "pp")
    assert any(t.get_text() == "OOM" for t in fig.axes[0].texts)
    df["fct"], df["pause"] = [3.0, 1.0, 2.0, 2.5], [1.0, 3.0, 2.0, 2.5]
    df["pareto"] = frames.pareto(df, minimize=["fct", "pause"])
    assert df["pareto"].tolist() == [True, True, True, False]
    fig = plots.pareto_scatter(df, "fct", "pause")
    assert len(fig.axes[0].lines) == 1

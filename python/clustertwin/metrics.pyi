"""Type stubs of clustertwin.metrics: a run as OpenMetrics time series."""
import os

DEFAULT_START_UNIX: int
MAX_SAMPLES: int
METRICS: dict[str, tuple[str, str, str]]


def write_openmetrics(report: dict, path: str | os.PathLike, interval_s: float = 10.0,
                      start_unix: float = ..., duration_s: float | None = None) -> int: ...


__all__ = ["DEFAULT_START_UNIX", "METRICS", "write_openmetrics"]

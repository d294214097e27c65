"""Type stubs of clustertwin.compare: real nccl-tests output beside the twin."""
import os
from typing import Any, Iterable

import pandas as pd

OPS: tuple[str, ...]


class NcclTestsLog:
    name: str
    op: str | None
    hosts: list[str]
    ranks: int
    nodes: int | None
    rows: list[dict]

    def __init__(self, name: str, op: str | None, hosts: list[str] = ..., ranks: int = 0, nodes: int | None = None,
                 rows: list[dict] = ...) -> None: ...


def parse_nccl_tests(text: str, name: str = "log") -> list[NcclTestsLog]: ...


def compare_nccl_tests(scenario: Any, logs: Iterable[str | os.PathLike], op: str | None = None,
                       nodes: int | None = None, threshold: float = 0.10, min_size: int = 1 << 20,
                       overrides: dict | None = None,
                       host_nodes: dict[str, int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]: ...


def nccl_size(text: str | int) -> str: ...


def nccl_tests(scenario: Any, op: str = "all_reduce", nodes: Iterable[int] | int = (2,), minbytes: str | int = "8",
               maxbytes: str | int = "8G", stepfactor: int = 2, stepbytes: str | int | None = None,
               datatype: str = "float", redop: str = "sum", overrides: dict | None = None,
               node_list: Iterable[int] | None = None) -> pd.DataFrame: ...


def localise(runs: list[tuple[NcclTestsLog, bool]], scenario: Any = None, host_nodes: dict[str, int] | None = None,
             overrides: dict | None = None) -> pd.DataFrame: ...


def read_step_log(path: str | os.PathLike) -> pd.DataFrame: ...


def slow_ranks(steps: pd.DataFrame, expected_step_s: float | None = None, threshold: float = 0.10) -> pd.DataFrame: ...


__all__ = ["NcclTestsLog", "OPS", "compare_nccl_tests", "localise", "nccl_size", "nccl_tests", "parse_nccl_tests", "read_step_log", "slow_ranks"]

"""Type stubs of clustertwin.planning: capacity planning (ct.plan)."""
from typing import Any, Callable, Mapping


def quantity(value: Any, what: str) -> float: ...


def plan(params: Any = None, tokens: Any = None, days: float | None = None, gpu: str = "H100-SXM",
         model: str | Mapping[str, Any] | None = None, seq: int | None = None, batch_tokens: Any = 4e6,
         pue: float | None = None, threads: int = 0,
         progress: bool | Callable[[int, int], None] = False) -> dict: ...

"""Type stubs of clustertwin.optimize: greedy or exhaustive search over scenario overrides."""
import os
from typing import Any, Mapping, Sequence

import pandas as pd

from .api import Scenario

def optimize(scenario: Scenario | Mapping[str, Any] | str | os.PathLike[str], space: Mapping[str, Sequence[Any]],
             objective: str = ..., maximize: bool = ..., constraints: Mapping[str, Any] | None = ...,
             overrides: Mapping[str, Any] | None = ..., start: Mapping[str, Any] | None = ...,
             max_evals: int = ..., workers: int = ..., exhaustive: bool = ...) -> pd.DataFrame: ...

"""Type stubs of clustertwin.layouts: many layouts of one cluster against one build of it."""
from typing import Any, Mapping, Sequence

import pandas as pd

from .api import ScenarioLike

RESULT_COLUMNS: list[str]

def evaluate_layouts(scenario: ScenarioLike, layouts: Sequence[Mapping[str, Any]] | None = ..., *,
                     grid: Mapping[str, Any] | None = ..., overrides: Mapping[str, Any] | None = ...,
                     threads: int = ...) -> pd.DataFrame: ...

"""Type stubs of clustertwin.accuracy: every validation set, published against predicted."""
from typing import Iterable

import pandas as pd

ROOT: str
VALIDATION: str
GIB: int

def accuracy(sets: Iterable[str] | None = ..., mode: str = ...) -> tuple[pd.DataFrame, pd.DataFrame]: ...

MODE_AGREEMENT: float

def mode_agreement(sets: Iterable[str] | None = ...) -> tuple[pd.DataFrame, pd.DataFrame]: ...

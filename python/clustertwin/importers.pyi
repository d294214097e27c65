"""Type stubs of clustertwin.importers: scenarios from a Hugging Face config.json or Megatron-LM arguments."""
import os
from typing import Any, Sequence

BASE: dict[str, Any]


class ImportedScenario(dict):
    unmapped: list[str]
    notes: list[str]

    def __init__(self, scenario: dict, unmapped: list[str], notes: list[str]) -> None: ...


def from_hf_config(config: str | os.PathLike | dict, base: dict | None = None,
                   seq_length: int | None = None) -> ImportedScenario: ...


def from_megatron_args(args: str | Sequence[str], base: dict | None = None) -> ImportedScenario: ...
def from_nemo_config(config: str | os.PathLike | dict, base: dict | None = None) -> ImportedScenario: ...


def import_report(sc: ImportedScenario) -> str: ...


__all__ = ["BASE", "ImportedScenario", "from_hf_config", "from_megatron_args", "from_nemo_config", "import_report"]

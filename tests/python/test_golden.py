"""Golden reports (tools/golden.py): every shipped scenario's report and every accuracy row as
recorded in tests/golden/, event counts included, numbers to a relative 1e-9. A change meant to
keep behaviour (a refactor) must pass unchanged; a change of the model regenerates them with
`/usr/bin/python3 tools/golden.py --update`, and the diff of tests/golden/ shows what moved."""
import json
import os
import sys

import pytest

sys.path.insert(0, "tools")
import golden  # noqa: E402

NAMES = sorted(os.listdir(golden.GOLDEN))


@pytest.fixture(scope="module")
def now():
    return golden.current()


@pytest.mark.parametrize("name", NAMES)
def test_report_is_unchanged(name, now):
    with open(os.path.join(golden.GOLDEN, name)) as f:
        differences = golden.diff(json.load(f), now[name])
    assert not differences, "\n".join(differences[:30])


def test_every_shipped_scenario_has_a_golden_report(now):
    assert set(now) == set(NAMES)

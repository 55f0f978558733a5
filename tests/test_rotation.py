"""CI's rotation (tests/conftest.py, tests/rotation.py): the heavy twelfths packed by measured seconds."""

import pathlib

from rotation import HEAVY_TWELFTHS, heavy_twelfths

TESTS = pathlib.Path(__file__).resolve().parent


def test_longest_first_into_the_lightest_slice():
    assert heavy_twelfths({"a": 5, "b": 4, "c": 3, "d": 3}, n=2) == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert heavy_twelfths({"b": 1, "a": 1}, n=3) == {"a": 0, "b": 1}  # ties by name, then the lowest slice


def test_the_tables_twelfths_are_balanced_and_name_real_tests():
    """Every twelfth is used, and none holds more than the largest group or 4/3 of an even share (longest-first's
    bound); each group is a node of a test file here or a `together` name a test file gives."""
    import json

    seconds = json.loads((TESTS / "heavy_seconds.json").read_text())
    assert set(HEAVY_TWELFTHS) == set(seconds)
    loads = [0.0] * 12
    for group, twelfth in HEAVY_TWELFTHS.items():
        loads[twelfth] += seconds[group]
    bound = max(max(seconds.values()), 4 / 3 * sum(seconds.values()) / 12)
    assert min(loads) > 0 and max(loads) <= bound, (loads, bound)
    sources = "".join(path.read_text() for path in TESTS.glob("test_*.py"))
    for group in seconds:
        if "::" in group:
            path, name = group.split("::", 1)
            source = (TESTS.parent / path).read_text() if (TESTS.parent / path).exists() else ""
            assert f"def {name.split('[')[0]}(" in source, group
        else:
            assert f'together="{group}"' in sources, group

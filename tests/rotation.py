"""CI's rotation of the heavy tests (tests/conftest.py applies it): which twelfth each heavy group runs in."""

import json
import pathlib

__all__ = ["HEAVY_TWELFTHS", "heavy_twelfths"]

# The heavy twelfths are packed by measured seconds, not by hash: by hash one twelfth held 13.9 test-minutes and
# another 1.5 (2026-12-08, 123 groups, 62.9 in all). tests/heavy_seconds.json holds each heavy group's seconds (a
# node's id, or its `together` name) from `TORCHAX_VAE_ROTATION= pytest -n 2 --dist loadfile -m "heavy and not
# by_hand" --durations=0 tests/test_*.py`, setup and call summed. The slices come from the table alone, so any
# subset of the tests sees the same ones; a group the table lacks falls to its hash's twelfth until measured.
def heavy_twelfths(seconds: dict, n: int = 12) -> dict:
    """{group: its slice}: the groups longest first (ties by name), each into the lightest slice so far (ties: the
    lowest)."""
    loads, slices = [0.0] * n, {}
    for group in sorted(seconds, key=lambda g: (-seconds[g], g)):
        slices[group] = min(range(n), key=lambda i: (loads[i], i))
        loads[slices[group]] += seconds[group]
    return slices


HEAVY_TWELFTHS = heavy_twelfths(json.loads(pathlib.Path(__file__).with_name("heavy_seconds.json").read_text()))

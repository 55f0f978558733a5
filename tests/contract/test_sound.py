"""The contract for the sound classes (tests/contract/checks.py): encode, decode, a stream of several chunks, and a
session, each against diffusers' model in PyTorch."""

import pytest

from contract import checks

ROWS = checks.rows("sound")


@pytest.mark.parametrize("name", ROWS)
def test_encode(name):
    checks.check_encode(name)


@pytest.mark.parametrize("name", ROWS)
def test_decode(name):
    checks.check_decode(name)


@pytest.mark.parametrize("name", ROWS)
def test_stream(name):
    checks.check_stream(name)


@pytest.mark.parametrize("name", ROWS)
def test_session(name):
    checks.check_session(name)

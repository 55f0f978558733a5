"""The contract for the image classes (tests/contract/checks.py): encode, decode, a stream, a session, the service
and 8 devices, each against diffusers' model in PyTorch. One file per kind, so that pytest-xdist spreads the rows
over both cores."""

from contract.checks import contract_tests

globals().update(contract_tests("image"))  # test_encode, test_decode, test_stream, test_session, ...

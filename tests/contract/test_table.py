"""The contract's table covers every class the registry serves, and its configs exist."""

from contract.cases import CASES
from helpers import MODELS
from vaes import requires
from torchax_vae import registry


def test_a_row_for_every_served_class():
    served = {row.diffusers_class for row in registry.ROWS}
    assert set(CASES) == served, f"missing: {sorted(served - set(CASES))}; not served: {sorted(set(CASES) - served)}"


def test_each_rows_config_is_built_here_or_says_why_not():
    for name, case in CASES.items():
        assert case.model in MODELS or requires(case.model), f"{name}: no config {case.model!r} in scripts/vaes.py"
        assert (case.encode_input is None) != (case.decode_input is None), f"{name}: an encoder's input or a decoder's"

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


def test_the_parity_page_opens_with_every_rows_figures():
    """docs/results/parity.md's first table (scripts/contract_table.py) has a row of figures for each served class."""
    import pathlib
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "results" / "parity.md").read_text()
    begin, end = "<!-- contract table: scripts/contract_table.py -->", "<!-- end of the contract table -->"
    assert page.index(begin) < page.index("\n## ", page.index("## ") + 1), "the contract table opens the page"
    rows = {line.split("|")[1].strip().strip("`") for line in page[page.index(begin):page.index(end)].splitlines()
            if line.startswith("| `")}
    served = {row.diffusers_class for row in registry.ROWS}
    assert rows == served, f"missing: {sorted(served - rows)}; not served: {sorted(rows - served)}"


def test_sessions_are_given_to_the_families_with_state():
    """A row gives a session's chunking exactly where its family carries state from chunk to chunk."""
    for row in registry.ROWS:
        stateful = registry.facade(row).family.carries_state
        assert (CASES[row.diffusers_class].session is not None) == stateful, (row.diffusers_class, stateful)

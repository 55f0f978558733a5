"""README's table of served classes, written from the registry (torchax_vae/registry.py): one row a class, with its
label and the pipelines that use it. tests/test_docs.py holds README to what this prints.

usage: python scripts/class_table.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from torchax_vae import registry  # noqa: E402


def table() -> str:
    lines = ["| diffusers class | what | its pipelines |", "|---|---|---|"]
    for kind in ("video", "image", "sound"):
        for row in registry.ROWS:
            if row.kind == kind:
                lines.append(f"| `{row.diffusers_class}` | {row.label} | {row.pipelines} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    print(table())


if __name__ == "__main__":
    main()

"""Import torchax 0.0.13 under torch 2.13, which removed aten overloads torchax names.

Applied only where torchax needs it: torchax before 0.0.14 under torch 2.13 or newer
(`needed`). The 0.0.14 nightlies and torch 2.11/2.12 import torchax as it is, and
then nothing here runs.

Upstream: torchax 0.0.13 lists named-dimension ("Dimname") overloads of aten ops
as keys of its autocast policy table (`torchax/amp.py`: `aten.prod.dim_Dimname`,
`aten.index_copy.dimname`) and in its decomposition list
(`torchax/decompositions.py`: `aten.all.dimname`, `aten.std.names_dim`, ...).
torch 2.13 removed those overloads, so the attribute lookup raises AttributeError
and `import torchax` fails before anything runs.

torch 2.14 also removed whole ops it names (`aten.cholesky`, `aten.qr`).

Fix: while torchax's modules are imported, looking up a missing overload on an
aten op packet returns a `RemovedOverload` placeholder instead of raising, and a
missing aten op a `RemovedOp`, whose overloads are such placeholders. A
placeholder is only ever a dict key or a list entry for an op torch can no longer
dispatch, so nothing calls it (`torch._decomp.get_decompositions` skips entries
that are not operators). The hook is removed as soon as the import finishes;
site-packages is not touched. `REMOVED_OVERLOADS` records what was papered over.

Still needed while `import torchax` fails in a fresh interpreter
(tests/test_patches.py::test_torchax_still_fails_to_import_unpatched; the CI job on
the newest torchax nightly checks the other path: torchax imported as it is).
"""

import contextlib
import importlib
import importlib.metadata
import re
import sys
import threading

import torch
from torch._ops import OpOverloadPacket, _OpNamespace

# Modules that name aten overloads at import time; `torchax.default_env()` imports
# the last four lazily, so they are imported here, under the hook, once.
_TORCHAX_MODULES = (
    "torchax",
    "torchax.decompositions",
    "torchax.ops.jaten",
    "torchax.ops.jtorch",
    "torchax.ops.jc10d",
)

REMOVED_OVERLOADS: set[str] = set()
_lock = threading.Lock()


class RemovedOverload:
    """Stands in for an aten overload that this torch no longer has."""

    def __init__(self, qualified_name: str):
        self.qualified_name = qualified_name

    def __repr__(self) -> str:
        return f"RemovedOverload({self.qualified_name!r})"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.qualified_name} was removed from torch {torch.__version__}")


class RemovedOp:
    """Stands in for an aten op that this torch no longer has (torch 2.14 removed `aten.cholesky` and `aten.qr`,
    which torchax 0.0.13 names as autocast keys and lowerings): each of its overloads is a `RemovedOverload`."""

    def __init__(self, qualified_name: str):
        self.qualified_name = qualified_name

    def __repr__(self) -> str:
        return f"RemovedOp({self.qualified_name!r})"

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        name = f"{self.qualified_name}.{key}"
        REMOVED_OVERLOADS.add(name)
        return RemovedOverload(name)

    def overloads(self) -> list[str]:
        return []

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.qualified_name} was removed from torch {torch.__version__}")


@contextlib.contextmanager
def _tolerate_removed_ops():
    original = _OpNamespace.__getattr__

    def getattr_or_placeholder(namespace, key):
        try:
            return original(namespace, key)
        except AttributeError:
            if key.startswith("__") or namespace.name != "aten":
                raise
            name = f"aten::{key}"
            REMOVED_OVERLOADS.add(name)
            return RemovedOp(name)

    _OpNamespace.__getattr__ = getattr_or_placeholder
    try:
        yield
    finally:
        _OpNamespace.__getattr__ = original


@contextlib.contextmanager
def _tolerate_removed_overloads():
    original = OpOverloadPacket.__getattr__

    def getattr_or_placeholder(packet, key):
        try:
            return original(packet, key)
        except AttributeError:
            if key.startswith("__"):
                raise
            name = f"{packet._qualified_op_name}.{key}"
            REMOVED_OVERLOADS.add(name)
            return RemovedOverload(name)

    OpOverloadPacket.__getattr__ = getattr_or_placeholder
    try:
        with _tolerate_removed_ops():
            yield
    finally:
        OpOverloadPacket.__getattr__ = original


def release(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "0.0.14.dev20261026" -> (0, 0, 14), "2.13.0+cpu" -> (2, 13, 0)."""
    match = re.match(r"\d+(\.\d+)*", version)
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group().split("."))


def needed(torchax_version: str, torch_version: str) -> bool:
    """Whether this torchax names overloads this torch removed: torchax < 0.0.14 under torch >= 2.13."""
    return release(torchax_version) < (0, 0, 14) and release(torch_version)[:2] >= (2, 13)


def import_torchax():
    """Returns the torchax module, imported so that it works under this torch.

    Under the hook only where `needed`; otherwise a plain import.
    """
    if all(name in sys.modules for name in _TORCHAX_MODULES):
        return sys.modules["torchax"]
    hook = _tolerate_removed_overloads if needed(importlib.metadata.version("torchax"), torch.__version__) else contextlib.nullcontext
    with _lock, hook():
        for name in _TORCHAX_MODULES:
            importlib.import_module(name)
    return sys.modules["torchax"]

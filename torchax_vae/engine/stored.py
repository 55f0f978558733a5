"""Stored programs: each traced program exported with `jax.export`, so a new process skips tracing.

Tracing diffusers' model through torchax costs seconds per program that JAX's
persistent compilation cache cannot save (it caches XLA's compilation of a
program, keyed by the program, which has to be traced first). The store keeps
the traced program itself (`jax.export`'s serialized StableHLO) in
`programs/` of the cache folder (torchax_vae/cache.py), keyed by everything
that changes it:

- the model: its diffusers class, config and module tree (`repr`);
- the platform it is lowered for ("cpu", "tpu", "cuda": the devices of its arguments, this machine's or a
  planning target's), also checked against the export on load;
- the program: its name (encoder/decoder, first or steady batch, layer, tile)
  and every argument's tree structure, shape, dtype and sharding (so the dtype,
  input shape, mesh and device kind);
- the code: the versions of jax, jaxlib, torch, torchax, diffusers and this
  package, and a digest of this package's source (patches included), so an
  edited checkout never reads programs traced by the code before the edit.

Safety: an entry is written atomically (a temporary file renamed into place)
with a SHA-256 digest of its payload in front. On load, a digest mismatch, an
export that does not deserialize, or one whose argument structure, shapes or
dtypes differ from the call's is never used: the program is traced again, the
entry replaced, and a warning logged. A program traced now and one loaded
from the store are compiled the same way (`jax.jit(exported.call)`), so both
give the same executable and the same result.
"""

import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import pathlib
import tempfile

import jax

from torchax_vae.engine.weights import config_of

logger = logging.getLogger(__name__)

SUFFIX = ".jaxexport"
_PACKAGES = ("jax", "jaxlib", "torch", "torchax", "diffusers")


@functools.cache
def code_digest() -> str:
    """SHA-256 of this package's source files (its patches among them), with the versions of what it traces with."""
    digest = hashlib.sha256()
    package = pathlib.Path(__file__).resolve().parent.parent  # (torchax_vae/, two levels above engine/stored.py)
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    for name in _PACKAGES:
        digest.update(f"{name}=={importlib.metadata.version(name)}".encode())
    return digest.hexdigest()


def model_digest(model) -> str:
    """SHA-256 of a diffusers model's class, config and module tree (not its weights: those are arguments)."""
    # without diffusers' bookkeeping keys (_name_or_path, _use_default_values: a list in set order, which
    # differs between processes)
    config = {k: v for k, v in dict(config_of(model)).items() if not k.startswith("_")}
    text = json.dumps([type(model).__qualname__, config, repr(model)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _signature(args) -> str:
    leaves = [(tuple(leaf.shape), str(leaf.dtype), str(getattr(leaf, "sharding", None))) for leaf in jax.tree.leaves(args)]
    return repr((str(jax.tree.structure(args)), leaves))


class ProgramStore:
    """Exported programs of one model in `folder`; `load` / `save` by program name and arguments."""

    def __init__(self, folder: pathlib.Path, model_key: str):
        self.folder = pathlib.Path(folder)
        self._model_key = model_key

    @classmethod
    def for_model(cls, cache_folder: pathlib.Path | None, model) -> "ProgramStore | None":
        """The store in a cache folder for a diffusers model; None when the caches are off."""
        if cache_folder is None:
            return None
        return cls(pathlib.Path(cache_folder) / "programs", model_digest(model))

    def path(self, name: str, args, platform: str) -> pathlib.Path:
        key = "\n".join((code_digest(), self._model_key, name, platform, _signature(args)))
        return self.folder / (hashlib.sha256(key.encode()).hexdigest() + SUFFIX)

    def load(self, name: str, args, platform: str) -> "jax.export.Exported | None":
        """The stored export of program `name` for `args` (weights first) on a JAX lowering `platform` ("cpu",
        "tpu", "cuda"), or None (missing, unusable, or exported for another platform)."""
        path = self.path(name, args, platform)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        try:
            digest, payload = blob[:32], blob[32:]
            if hashlib.sha256(payload).digest() != digest:
                raise ValueError("its digest does not match its contents")
            exported = jax.export.deserialize(bytearray(payload))
            _check_matches(exported, args, platform)
        except Exception as error:  # noqa: BLE001 (anything wrong with an entry means: trace again)
            logger.warning("torchax_vae: stored program %s (%s) is unusable (%s); tracing it again", name, path, error)
            return None
        return exported

    def save(self, name: str, args, exported: "jax.export.Exported", platform: str) -> None:
        """Writes the export atomically; a store that cannot be written is skipped with a warning."""
        path = self.path(name, args, platform)
        try:
            payload = bytes(exported.serialize())
        except Exception as error:  # noqa: BLE001 (e.g. flatbuffers missing where the package came without its dependencies)
            logger.warning("torchax_vae: cannot serialize program %s (%s); it is not stored", name, error)
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.stem[:16]}.", suffix=".partial")
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(hashlib.sha256(payload).digest() + payload)
                os.replace(temp, path)
            except BaseException:
                os.unlink(temp)
                raise
        except OSError as error:
            logger.warning("torchax_vae: cannot store program %s in %s (%s)", name, self.folder, error)


def _check_matches(exported, args, platform: str) -> None:
    """ValueError unless the export is for `platform` and takes exactly `args` (tree structure, shapes, dtypes)."""
    if platform not in exported.platforms:
        raise ValueError(f"it was exported for {exported.platforms}, the call runs on {platform!r}")
    in_tree = jax.tree.structure((tuple(args), {}))
    if exported.in_tree != in_tree:
        raise ValueError(f"it takes {exported.in_tree}, the call gives {in_tree}")
    leaves = jax.tree.leaves(args)
    for aval, leaf in zip(exported.in_avals, leaves, strict=True):
        if tuple(aval.shape) != tuple(leaf.shape) or aval.dtype != leaf.dtype:
            raise ValueError(f"an argument of shape {aval.shape} {aval.dtype} where the call has {leaf.shape} {leaf.dtype}")

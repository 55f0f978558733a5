"""The on-disk caches, on by default for the `torchax-vae` command and for `TorchaxVAE` in Python.

Two caches share one folder:
- JAX's persistent compilation cache: a compiled XLA program keyed by its
  HLO, flags and backend (and, on GPUs, XLA's autotuning results), so the
  next process loads it instead of compiling;
- the program store (torchax_vae/engine/stored.py, in `programs/` inside it): each
  traced program, exported with `jax.export`, so the next process skips
  tracing diffusers' model through torchax as well.

The folder is, first found: `--cache-dir`, the environment variable
TORCHAX_VAE_CACHE_DIR, then `$XDG_CACHE_HOME/torchax_vae/jax` (default
`~/.cache/torchax_vae/jax`). `--no-cache`, or TORCHAX_VAE_CACHE_DIR set to
"" / "off" / "0", disables both. In Python the first `TorchaxVAE` turns them
on (`for_api`) unless the command, `enable(...)` or the environment said
otherwise; a JAX compilation cache the user configured is left as it is.
"""

import logging
import os
import pathlib

import jax

logger = logging.getLogger(__name__)

__all__ = ["ENV", "default_dir", "resolve", "enable", "for_api", "store_only"]

ENV = "TORCHAX_VAE_CACHE_DIR"
_OFF = ("", "off", "0", "none", "false")
_UNSET = object()
_chosen = _UNSET  # what `enable` was last given in this process (a folder or None), or _UNSET


def default_dir() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "torchax_vae" / "jax"


def resolve(cache_dir: str | None = None, disabled: bool = False) -> pathlib.Path | None:
    """The cache folder the flags and environment ask for, or None when caching is off."""
    if disabled:
        return None
    if cache_dir is not None:
        return pathlib.Path(cache_dir).expanduser()
    if ENV in os.environ:
        value = os.environ[ENV]
        return None if value.strip().lower() in _OFF else pathlib.Path(value).expanduser()
    return default_dir()


def enable(path: pathlib.Path | None) -> pathlib.Path | None:
    """Points JAX's persistent compilation cache and the program store at `path` (created); None: both off."""
    global _chosen
    _chosen = path
    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Defaults skip programs that compile in under a second; the VAE's small ones are worth keeping too.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # XLA's own caches too where JAX has them (GPU autotuning results, compiled kernels): the conv autotuning
    # of a first GPU call is most of its compile time
    jax.config.update("jax_persistent_cache_enable_xla_caches", "all")
    return path


def store_only(path: pathlib.Path | None) -> pathlib.Path | None:
    """The program store (and stored plans) in `path`, JAX's persistent compilation cache left as it is: for
    compiling for abstract devices (`torchax-vae plan`), whose executables JAX's cache cannot hold (each read
    warned "PjRtCompiler must be constructed with a Client")."""
    global _chosen
    _chosen = path
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
    return path


def for_api() -> pathlib.Path | None:
    """The cache folder a TorchaxVAE uses, turning the caches on at the default place on first use.

    What `enable` was given, if it was called (the command calls it); else `resolve()`
    (the environment variable, or the default folder), enabled, unless the user had
    configured JAX's compilation cache themselves: then JAX's is left alone and only
    the program store goes into the folder. None: off.
    """
    if _chosen is not _UNSET:
        return _chosen
    path = resolve()
    if path is None or jax.config.jax_compilation_cache_dir:
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
        return path
    try:
        return enable(path)
    except OSError as error:  # an unwritable home: run without caches rather than fail
        logger.warning("torchax_vae: no compilation cache (%s); set %s to a writable folder", error, ENV)
        return enable(None)

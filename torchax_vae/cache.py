"""JAX's persistent compilation cache, on by default for the `torchax-vae` command.

A compiled XLA program is stored on disk keyed by its HLO, flags and
backend, so the next process that needs it loads it instead of compiling
(tracing through torchax still happens each time). The folder is, first
found: `--cache-dir`, the environment variable TORCHAX_VAE_CACHE_DIR, then
`$XDG_CACHE_HOME/torchax_vae/jax` (default `~/.cache/torchax_vae/jax`).
`--no-cache`, or TORCHAX_VAE_CACHE_DIR set to "" / "off" / "0", disables it.
"""

import os
import pathlib

import jax

__all__ = ["ENV", "default_dir", "resolve", "enable"]

ENV = "TORCHAX_VAE_CACHE_DIR"
_OFF = ("", "off", "0", "none", "false")


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
    """Points JAX's persistent compilation cache at `path` (created), caching every program; None: off."""
    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Defaults skip programs that compile in under a second; the VAE's small ones are worth keeping too.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path

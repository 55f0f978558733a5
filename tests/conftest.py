import os
import zlib

import pytest
import torch

# The suite never writes to the user's cache folder, and (for speed: exporting every program costs about 9 % of
# a cold run) runs with the caches off; tests/test_stored.py turns them on in a folder of its own.
os.environ["TORCHAX_VAE_CACHE_DIR"] = "off"
# The test extra brings libtpu and JAX's CUDA plugin (tests/test_plan.py compiles for abstract TPUs and GPUs);
# JAX must not try to start their backends on this CPU-only machine (subprocesses inherit this).
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# XLA:CPU's backend (LLVM) at optimization level 0 for the suite's programs: it compiles them in about half the time
# (tiny Wan's decoder programs 10.5 s -> 4.9 s, CogVideoX's 27 layer programs 7.6 -> 5.7, Kandinsky 6 SR's 16.5 ->
# 9.7; 2026-11-29, 2 cores), and on a fresh CI machine the suite is mostly compiling. The HLO the tests compare is
# the same; a user's programs (and scripts/) compile at XLA's default. Subprocesses inherit it (helpers.xla_flags).
SUITE_XLA_FLAGS = "--xla_backend_optimization_level=0"
if SUITE_XLA_FLAGS not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), SUITE_XLA_FLAGS]))
# No test downloads anything: a hub lookup fails at once instead of waiting out the network (diffusers' AutoencoderKL
# hub tests spent 23 s each before failing offline)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from torchax_vae import TorchaxVAE
from helpers import random_vae
from rotation import HEAVY_TWELFTHS

# JAX's persistent compilation cache for the suite (TORCHAX_VAE_CACHE_DIR stays off above: the program store, which
# traces once per process, is what tests/test_stored.py tests by itself). The tests build many wrappers of the same
# tiny models, and each compiles the same XLA programs again; with this cache, later ones (and later runs: CI's
# slow set after its default suite) load them. Keyed by the program, flags, backend and JAX version, so an entry
# never stands for another computation. TORCHAX_VAE_TEST_JAX_CACHE=off turns it off.
_TEST_JAX_CACHE = os.environ.get("TORCHAX_VAE_TEST_JAX_CACHE", os.path.join(os.path.dirname(__file__), "..", ".jax-cache"))
if _TEST_JAX_CACHE.strip().lower() not in ("", "off", "0"):
    import jax

    jax.config.update("jax_compilation_cache_dir", os.path.abspath(_TEST_JAX_CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@pytest.fixture(scope="session")
def tiny_vae():
    return random_vae("tiny")


# The wrappers are per test module, not per session: a wrapper keeps every program it compiled, and on CPU each
# program holds mappings of machine code (torchax_vae/engine/programs.py). Held for the whole slow suite, these two
# took 17,000 of the process's 65,530 mappings.
@pytest.fixture(scope="module")
def _tiny_torchax_module(tiny_vae):
    return TorchaxVAE(tiny_vae)


@pytest.fixture
def tiny_torchax(_tiny_torchax_module):
    """One wrapper for the test module (compiled programs are shared), reset to defaults for each test."""
    vae = _tiny_torchax_module
    names = ("tiling_mode", "use_slicing", "memory_budget", "compile_effort") + vae.family.settings
    settings = {name: getattr(vae, name) for name in names}  # the engine's and the family's
    yield vae
    for name, value in settings.items():
        setattr(vae, name, value)


@pytest.fixture(scope="session")
def official_vae():
    return random_vae("official")


@pytest.fixture(scope="module")
def official_torchax(official_vae):
    return TorchaxVAE(official_vae)


@pytest.fixture(scope="module", autouse=True)
def _release_programs_after_each_module():
    """A module's wrappers (and their compiled programs) go when it ends, not at some later collection."""
    yield
    import gc

    gc.collect()


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def pytest_ignore_collect(collection_path, config):
    """The default suite (-m "not slow") does not import diffusers' own tests (tests/diffusers: all slow);
    importing them runs their enable_full_determinism(), which changes torch's global settings."""
    import pathlib

    here = pathlib.Path(__file__).parent
    if collection_path == here / "diffusers" and "not slow" in (config.getoption("markexpr") or ""):
        return True
    return None


# The rotation (pyproject's `rotate` and `heavy` markers; `_rotated_out` has the periods): CI sets
# TORCHAX_VAE_ROTATION=K/12, K from the commit, and of the nodes
# marked `rotate` runs only those whose id hashes (crc32, the same on every machine) to K modulo N: each CI run a
# slice. K follows the commit's hash, so a node runs in about one CI run of N (a chance, not a strict turn). A
# failure names its node, and `TORCHAX_VAE_ROTATION= pytest NODE` runs it again.
ROTATION = os.environ.get("TORCHAX_VAE_ROTATION", "").strip()


def rotation_slice(nodeid: str, rotation: str = ROTATION) -> bool:
    """Whether a `rotate` node runs under `rotation` ("K/N"; "" runs every node)."""
    if not rotation:
        return True
    k, n = (int(part) for part in rotation.split("/"))
    return zlib.crc32(nodeid.encode()) % n == k % n


def _rotated_out(item) -> bool:
    """Whether the rotation leaves `item` out of this run (CI's K/12, K from the commit): a `rotate` node (each family
    on 8 devices, the pipelines' outputs past one per VAE class and loop kind, the modular ones) of another sixth (by
    node, K modulo 6); a `heavy` one of the project's own of another twelfth (K modulo 12; the vendored heavy files
    stay by hand); the project's other own slow tests (tests/test_*.py: released architectures, 8-device and
    multi-process runs, offline TPU and GPU compiles, the program store, more sizes) of another sixth (K modulo 6);
    diffusers' vendored pipeline files (wrapped, and on plain diffusers, CI's step that checks the expectations
    there, its model files too) of another third (by file, so that both runs take the same files). What runs every
    time: the default suite, the family contract, diffusers' vendored model test files wrapped, and one pipeline's
    output per VAE class and loop kind (tests/diffusers/test_pipeline_outputs.py)."""
    k = int(ROTATION.split("/")[0])
    own = item.nodeid.startswith("tests/test_")
    heavy = item.get_closest_marker("heavy")
    if heavy is not None:  # (nodes that share a costly fixture name it: `heavy(together=...)` rotates them as one)
        group = heavy.kwargs.get("together", item.nodeid)
        return not own or HEAVY_TWELFTHS.get(group, zlib.crc32(group.encode()) % 12) != k % 12
    if item.get_closest_marker("rotate") is not None:
        return not rotation_slice(item.nodeid, f"{k % 6}/6")
    if own and item.get_closest_marker("slow") is not None:
        return not rotation_slice(item.nodeid, f"{k % 6}/6")
    vendored = item.nodeid.startswith("tests/diffusers/tests/")
    plain = os.environ.get("TORCHAX_VAE_PLAIN_DIFFUSERS") == "1"
    if vendored and (plain or not item.nodeid.startswith("tests/diffusers/tests/models/")):
        return not rotation_slice(item.nodeid.split("::")[0], f"{k % 3}/3")
    return False


def pytest_collection_modifyitems(config, items):
    if not ROTATION:
        return
    kept, left = [], []
    for item in items:
        (left if _rotated_out(item) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept

"""The program store (torchax_vae/engine/stored.py) and the caches' defaults for the Python API (torchax_vae/cache.py).

A warm start across processes, cold against warm with the same result, is in
tests/test_scripts.py::test_bench_speed_times_both_sides (each side its own process).
"""

import json
import logging
import os
import subprocess
import sys

import jax
import pytest
import torch

from torchax_vae import TorchaxVAE, cache
from torchax_vae.engine import stored
from helpers import TOLERANCE, assert_close, random_vae


@pytest.fixture
def store_dir(tmp_path, monkeypatch):
    """A new cache folder for the TorchaxVAEs made in the test (the process's JAX cache stays where it is)."""
    monkeypatch.setattr(cache, "_chosen", tmp_path)
    return tmp_path / "programs"


def _decode_twice(config, latents_shape):
    """Decodes with a TorchaxVAE, then with a new one (a new process's view: nothing compiled in it yet)."""
    vae = random_vae(config)
    z = torch.randn(latents_shape, generator=torch.Generator().manual_seed(1))
    first = TorchaxVAE(vae)
    out_first = first.decode(z).sample
    second = TorchaxVAE(vae)
    out_second = second.decode(z).sample
    return vae, z, (first, out_first), (second, out_second)


@pytest.mark.parametrize("config,shape", [("tiny", (1, 4, 3, 4, 6)),
                                          pytest.param("wan-tiny", (1, 16, 3, 4, 6), marks=pytest.mark.slow)])
def test_a_new_wrapper_loads_every_program_from_the_store(store_dir, config, shape):
    vae, z, (first, out_first), (second, out_second) = _decode_twice(config, shape)
    assert not any(s["from_store"] for s in first.compile_stats())
    stats = second.compile_stats()
    assert stats and all(s["from_store"] for s in stats), [(s["name"], s["from_store"]) for s in stats]
    assert len(list(store_dir.glob(f"*{stored.SUFFIX}"))) == len(stats)
    assert torch.equal(out_first, out_second)  # the same executable either way
    assert_close(out_second, vae.decode(z).sample, TOLERANCE[torch.float32], f"{config} decode from the store")


@pytest.mark.slow  # 47 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_stored_programs_compute_what_traced_ones_do(monkeypatch, tmp_path):
    """With the caches off a program is compiled from its trace; with them, from its export: the same results
    (the rest of the suite runs with them off)."""
    vae = random_vae("wan-tiny")
    x = torch.randn(1, 3, 5, 16, 16, generator=torch.Generator().manual_seed(2))
    results = []
    for chosen in (None, tmp_path):
        monkeypatch.setattr(cache, "_chosen", chosen)
        ours = TorchaxVAE(vae)
        assert (ours._engine.programs.store is None) == (chosen is None)
        mean = ours.encode(x).latent_dist.mean
        results.append((mean, ours.decode(mean).sample))
    for (off, on), what in zip(zip(*results), ("encode", "decode")):
        assert_close(on, off, 1e-6, f"{what}: exported vs traced")


def _store_entries(store_dir):
    return sorted(store_dir.glob(f"*{stored.SUFFIX}"))


@pytest.mark.slow  # 23 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_a_corrupt_entry_is_traced_again_and_replaced(store_dir, caplog):
    vae, z, _, _ = _decode_twice("tiny", (1, 4, 3, 4, 6))
    entries = _store_entries(store_dir)
    for path in entries:  # one flipped byte in every payload
        blob = bytearray(path.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        path.write_bytes(bytes(blob))
    with caplog.at_level(logging.WARNING, logger="torchax_vae.engine.stored"):
        ours = TorchaxVAE(vae)
        out = ours.decode(z).sample
    assert "digest does not match" in caplog.text and "tracing it again" in caplog.text
    assert not any(s["from_store"] for s in ours.compile_stats())
    assert_close(out, vae.decode(z).sample, TOLERANCE[torch.float32], "decode after a corrupt store")
    again = TorchaxVAE(vae)  # the entries were rewritten: good again
    again.decode(z)
    assert all(s["from_store"] for s in again.compile_stats())


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_an_entry_for_other_arguments_is_never_used(store_dir, caplog):
    """An intact export of another program at a program's key (what a key collision would give) is refused."""
    vae, z, _, _ = _decode_twice("tiny", (1, 4, 3, 4, 6))
    ours = set(_store_entries(store_dir))
    TorchaxVAE(vae).decode(z[:, :, :, :2, :2])  # stores the programs of another input shape
    foreign = next(p for p in _store_entries(store_dir) if p not in ours).read_bytes()
    for path in ours:
        path.write_bytes(foreign)
    target = TorchaxVAE(vae)
    with caplog.at_level(logging.WARNING, logger="torchax_vae.engine.stored"):
        out = target.decode(z).sample
    assert "is unusable" in caplog.text
    assert not any(s["from_store"] for s in target.compile_stats())
    assert_close(out, vae.decode(z).sample, TOLERANCE[torch.float32], "decode after mismatched entries")


@pytest.mark.slow  # 38 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_code_or_model_changes_miss_the_store(store_dir, monkeypatch):
    vae, z, _, _ = _decode_twice("tiny", (1, 4, 3, 4, 6))
    other = random_vae("tiny")
    other.config["scaling_factor"] = 0.5  # the config is part of the key even where the program would not change
    fresh = TorchaxVAE(other)
    fresh.decode(z)
    assert not any(s["from_store"] for s in fresh.compile_stats())
    monkeypatch.setattr(stored, "code_digest", lambda: "edited")  # an edited checkout or another version
    edited = TorchaxVAE(vae)
    edited.decode(z)
    assert not any(s["from_store"] for s in edited.compile_stats())


@pytest.mark.slow  # 17 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_an_unwritable_store_only_warns(tmp_path, monkeypatch, caplog):
    (tmp_path / "programs").write_text("a file where the folder would be")
    monkeypatch.setattr(cache, "_chosen", tmp_path)
    vae = random_vae("tiny")
    z = torch.randn(1, 4, 2, 4, 4)
    with caplog.at_level(logging.WARNING, logger="torchax_vae.engine.stored"):
        out = TorchaxVAE(vae).decode(z).sample
    assert "cannot store program" in caplog.text
    assert_close(out, vae.decode(z).sample, TOLERANCE[torch.float32], "decode without a writable store")


@pytest.mark.slow  # 10 s (CI: every sixth run)
def test_a_program_that_cannot_be_serialized_still_runs(store_dir, monkeypatch, caplog):
    def no_flatbuffers(self):
        raise ImportError("Please install 'flatbuffers' in order to use Exported serialization")

    monkeypatch.setattr(jax.export.Exported, "serialize", no_flatbuffers)
    vae = random_vae("tiny")
    z = torch.randn(1, 4, 2, 4, 4)
    with caplog.at_level(logging.WARNING, logger="torchax_vae.engine.stored"):
        out = TorchaxVAE(vae).decode(z).sample
    assert "cannot serialize program" in caplog.text and not list(store_dir.glob(f"*{stored.SUFFIX}"))
    assert_close(out, vae.decode(z).sample, TOLERANCE[torch.float32], "decode without serialization")


def test_caches_off_means_no_store(monkeypatch):
    monkeypatch.setattr(cache, "_chosen", None)
    assert TorchaxVAE(random_vae("tiny"))._engine.programs.store is None


_API_DEFAULT = """
import json, os, torch, jax
from torchax_vae import TorchaxVAE
import sys; sys.path.insert(0, "tests")
from helpers import random_vae
vae = TorchaxVAE(random_vae("tiny"))
vae.decode(torch.zeros(1, 4, 2, 4, 4))
folder = jax.config.jax_compilation_cache_dir
print(json.dumps({"jax_cache": folder, "xla_caches": jax.config.jax_persistent_cache_enable_xla_caches,
                  "store": vae._engine.programs.store and str(vae._engine.programs.store.folder)}))
"""


@pytest.mark.slow  # 31 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_the_api_turns_the_caches_on_by_default(tmp_path):
    """A plain TorchaxVAE in a new process, nothing configured: both caches in the default folder, with XLA's."""
    env = {k: v for k, v in os.environ.items() if k not in (cache.ENV, "JAX_COMPILATION_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    result = subprocess.run([sys.executable, "-c", _API_DEFAULT], capture_output=True, text=True, env=env,
                            cwd=os.path.dirname(os.path.dirname(__file__)), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    default = tmp_path / "xdg" / "torchax_vae" / "jax"
    assert (seen["jax_cache"], seen["store"], seen["xla_caches"]) == (str(default), str(default / "programs"), "all")
    assert any(p.name.endswith("-cache") for p in default.iterdir())  # a compiled program
    assert list((default / "programs").glob(f"*{stored.SUFFIX}"))  # a traced one


def test_off_and_a_users_own_jax_cache(tmp_path, monkeypatch):
    """TORCHAX_VAE_CACHE_DIR=off: no caches; a JAX cache the user configured: theirs stays, the store goes to ours."""
    monkeypatch.setattr(cache, "_chosen", cache._UNSET)
    monkeypatch.setenv(cache.ENV, "off")
    assert cache.for_api() is None
    monkeypatch.setenv(cache.ENV, str(tmp_path / "ours"))
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "users"))
    try:
        assert cache.for_api() == tmp_path / "ours"
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "users")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


@pytest.mark.slow  # about 20 s of compiles for two abstract targets
@pytest.mark.heavy  # 49 s on 2 cores (AMD): out of CI's time; the stored-program tests of the default suite hold
def test_a_process_that_decoded_on_cpu_precompiles_for_abstract_tpus_and_h100s_with_the_store_on(store_dir):
    """The store keys programs by platform: before, precompile on a TPU mesh loaded (or exported) the CPU
    program and failed with "exported for platforms ('cpu',) but it is used on ('tpu',)"."""
    from vaes import meta_vae
    from torchax_vae import make_mesh
    from torchax_vae.plan.targets import target

    vae = random_vae("tiny")
    z = torch.randn(1, 4, 3, 4, 6, generator=torch.Generator().manual_seed(1))
    assert_close(TorchaxVAE(vae).decode(z).sample, vae.decode(z).sample, TOLERANCE[torch.float32], "CPU decode")
    for name in ("v6e-8", "h100"):
        devices = target(name).devices()
        for attempt in ("traced and stored", "from the store"):
            planned = TorchaxVAE(meta_vae("tiny"), mesh=make_mesh(devices))
            stats = planned.precompile("decode", (1, 4, 3, 4, 6))
            assert stats and all(s["from_store"] == (attempt == "from the store") for s in stats), (name, attempt)
            assert all(s["devices"][0].startswith(("TPU", "NVIDIA H100")) for s in stats), stats[0]["devices"]
    assert_close(TorchaxVAE(vae).decode(z).sample, vae.decode(z).sample, TOLERANCE[torch.float32], "CPU again")

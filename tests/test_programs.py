"""Compiled programs: one per frame-batch shape, reused across lengths, described by compile_stats()."""

import jax
import pytest
import torch
from helpers import batch_program, random_vae

from torchax_vae import TorchaxVAE


@pytest.fixture
def fresh():
    return TorchaxVAE(random_vae("tiny"))


def names(vae):
    return sorted({(batch_program(s["name"]), s["input_shapes"][0]) for s in vae.compile_stats()})


@pytest.mark.slow  # 18 s on 2 cores (default-suite time); test_repeated_calls_compile_nothing_new stays
def test_decode_any_length_reuses_at_most_four_programs(fresh):
    for latent_frames in range(1, 14):  # 1 .. 49 output frames
        fresh.decode(torch.randn(1, 4, latent_frames, 2, 2))
    assert names(fresh) == [
        ("decoder", (1, 4, 1, 2, 2)),
        ("decoder", (1, 4, 2, 2, 2)),
        ("decoder", (1, 4, 3, 2, 2)),
        ("decoder+conv_cache", (1, 4, 2, 2, 2)),
    ]


@pytest.mark.slow  # 10 s on 2 cores (default-suite time)
def test_encode_pipeline_lengths_reuse_three_programs(fresh):
    for frames in (1, 9, 17, 33, 49):  # the 8k+1 lengths CogVideoX generates, and single images
        fresh.encode(torch.randn(1, 3, frames, 16, 16))
    assert names(fresh) == [
        ("encoder", (1, 3, 1, 16, 16)),
        ("encoder", (1, 3, 9, 16, 16)),
        ("encoder+conv_cache", (1, 3, 8, 16, 16)),
    ]


@pytest.mark.slow  # 44 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_repeated_calls_compile_nothing_new(fresh):
    z = torch.randn(1, 4, 5, 2, 2)
    fresh.decode(z)
    before = fresh.compile_stats()
    fresh.decode(z)
    fresh.decode(torch.randn(1, 4, 9, 2, 2))  # longer video, same batch shapes
    assert fresh.compile_stats() == before


def test_compile_stats_report_xla_analysis(fresh):
    fresh.program_split = "batch"
    fresh.decode(torch.randn(1, 4, 3, 2, 2))
    (stats,) = fresh.compile_stats()
    assert stats["name"] == "decoder"
    assert stats["input_shapes"] == ((1, 4, 3, 2, 2), None)
    assert stats["compile_seconds"] > 0 and stats["lower_seconds"] > 0
    assert stats["devices"] == (str(jax.devices()[0]),)
    assert stats["flops"] > 1e6
    assert stats["temp_bytes"] > 0


def test_conv_cache_stays_on_device(fresh, monkeypatch):
    """Each frame batch gets the very arrays the previous one returned, and nothing is copied in from the host.

    (On CPU, JAX does not guard device-to-host reads, which are zero-copy there;
    a host round trip of the cache would show up as a host-to-device copy.)
    """
    calls = {}  # per program of a batch (one, or one per layer): (conv_cache passed, conv_cache returned) per batch
    run = fresh._engine.programs.run

    def spy(name, fn, weights, chunk, conv_cache, *rest):
        out, new_cache = run(name, fn, weights, chunk, conv_cache, *rest)
        calls.setdefault(name.removesuffix("+conv_cache"), []).append((conv_cache, new_cache))
        return out, new_cache

    monkeypatch.setattr(fresh._engine.programs, "run", spy)
    z = torch.randn(1, 4, 7, 2, 2)
    expected = fresh.decode(z).sample  # compiles (and copies z in) outside the guard
    calls.clear()
    env = fresh._family.lowered.env
    z_device = env.j2t_iso(jax.device_put(z.numpy()))
    with jax.transfer_guard("disallow"):
        out = fresh.decode(z_device).sample
    assert type(out) is type(z_device)
    assert torch.equal(torch.from_numpy(jax.device_get(out._elem).copy()), expected)
    assert len(calls) == len(fresh._family.lowered.stages["decoder"])  # the default on CPU: a program per layer
    for batches in calls.values():
        assert len(batches) == 3 and batches[0][0] is None
        for (_, returned), (passed, _) in zip(batches, batches[1:]):
            assert all(a is b for a, b in zip(jax.tree.leaves(returned), jax.tree.leaves(passed), strict=True))
            assert all(isinstance(a, jax.Array) for a in jax.tree.leaves(passed))


def test_sliced_device_input_is_split_on_the_device(fresh):
    fresh.enable_slicing()
    z = torch.randn(2, 4, 3, 2, 2)
    expected = fresh.decode(z).sample
    z_device = fresh._family.lowered.env.j2t_iso(jax.device_put(z.numpy()))
    fresh.decode(z_device)  # compiles the split once, outside the guard
    with jax.transfer_guard("disallow"):
        out = fresh.decode(z_device).sample
    assert torch.equal(torch.from_numpy(jax.device_get(out._elem).copy()), expected)


def test_executions_count_every_run(fresh):
    """Programs.executions() lists a program once per frame batch it ran, and nothing for abstract planning."""
    with fresh._engine.programs.executions() as runs:
        fresh.precompile("decode", (1, 4, 7, 2, 2))
        assert runs == []
        fresh.decode(torch.randn(1, 4, 7, 2, 2))  # 7 latent frames: batches of 3, 2 and 2
    per_batch = len(fresh._family.lowered.stages["decoder"])  # programs per frame batch (the default on CPU: one per layer)
    expected = [("decoder", 3)] * per_batch + [("decoder+conv_cache", 2)] * (2 * per_batch)
    assert [(batch_program(s.name), s.input_shapes[0][2]) for s in runs] == expected


def test_programs_share_a_compilation_only_when_equal():
    """Alike programs share one compilation; programs that differ only in which argument they read do not."""
    import jax.numpy as jnp

    from torchax_vae.engine.programs import Programs

    programs = Programs()
    weights = {"w": jnp.ones(3)}
    a, b = jnp.arange(3.0), jnp.arange(3.0) + 10
    first = programs.run("first", lambda w, a, b: a * 2 + w["w"], weights, a, b)
    second = programs.run("second", lambda w, a, b: b * 2 + w["w"], weights, a, b)
    alike = programs.run("alike", lambda w, a, b: a * 2 + w["w"], weights, b, a)
    assert jnp.array_equal(first, a * 2 + 1) and jnp.array_equal(second, b * 2 + 1)
    assert jnp.array_equal(alike, b * 2 + 1)
    assert len(programs) == 3 and len(programs._by_text) == 2


def test_shared_table_is_bounded_lru_and_clearable(monkeypatch):
    """Compilations are shared while a cache holds them, and the SHARED_LIMIT most recently used besides: the
    process does not keep every program it ever compiled (on CPU each holds mappings of machine code)."""
    import gc

    import jax.numpy as jnp

    from torchax_vae import clear_compiled
    from torchax_vae.engine import programs as programs_module
    from torchax_vae.engine.programs import Programs

    monkeypatch.setattr(programs_module, "SHARED_LIMIT", 2)
    monkeypatch.setattr(programs_module, "_LIVE", programs_module._LIVE.__class__())
    monkeypatch.setattr(programs_module, "_RECENT", programs_module._RECENT.__class__())
    recent, live = programs_module._RECENT, programs_module._LIVE
    w, x = jnp.ones(3), jnp.arange(3.0)
    fns = {k: (lambda w, a, k=k: a * k + w) for k in (2.0, 3.0, 4.0, 5.0, 6.0)}
    cache, keys = Programs(), {}
    for k in (2.0, 3.0):
        cache.run(f"times {k}", fns[k], w, x)
        keys[k] = next(reversed(recent))
    other = Programs()
    other.run("times 2 again", fns[2.0], w, x)  # a hit: times 2 becomes the most recently used
    assert other._compiled[next(iter(other._compiled))].compiled is live[keys[2.0]]
    cache.run("times 4", fns[4.0], w, x)  # over the limit: times 3 leaves the recent ones, still live in `cache`
    keys[4.0] = next(reversed(recent))
    assert list(recent) == [keys[2.0], keys[4.0]] and keys[3.0] in live
    assert jnp.array_equal(cache.run("times 3", fns[3.0], w, x), x * 3 + 1)  # still this cache's own program
    del cache, other
    for k in (5.0, 6.0):  # programs of caches that are gone: only the two most recent stay
        Programs().run(f"times {k}", fns[k], w, x)
    gc.collect()
    assert len(live) == 2 and set(live.keys()) == set(recent)
    assert clear_compiled() == 2 and len(live) == len(recent) == 0

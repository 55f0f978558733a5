"""Tiling: diffusers' tiled encode/decode within fp32 1e-4, a bounded set of programs and memory, auto tiling."""

import logging

import jax
import pytest
import torch
from helpers import assert_close, batch_program, by_hand, random_vae, TOLERANCE

from torchax_vae import TorchaxVAE

FP32 = TOLERANCE[torch.float32]
# 32x24 sample tiles (4x3 latent) with overlaps that leave one or two short edge tiles per axis.
TILES = dict(tile_sample_min_height=32, tile_sample_min_width=24, tile_overlap_factor_height=1 / 4, tile_overlap_factor_width=1 / 3)


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def tiled(tiny_vae, tiny_torchax):
    """The tiny model in PyTorch and through TorchaxVAE, both tiling with TILES."""
    tiny_vae.enable_tiling(**TILES)
    tiny_torchax.enable_tiling(**TILES)
    yield tiny_vae, tiny_torchax
    tiny_vae.disable_tiling()
    tiny_vae.disable_slicing()


@pytest.mark.slow  # 55 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize(
    "frames,batch,height,width,slicing,overlap_w",
    [
        (9, 2, 48, 40, False, None),  # rows 32, 24 tall; columns 24, 24, 8 wide
        # (45 s each on 2 cores (AMD): by hand, -m heavy)
        pytest.param(13, 1, 56, 44, False, 1 / 2, marks=[pytest.mark.slow, pytest.mark.heavy]),  # short tiles: 24, 24, 20, 8
        pytest.param(5, 2, 40, 64, True, None, marks=pytest.mark.slow),
        pytest.param(17, 1, 33, 25, False, None, marks=[pytest.mark.slow, pytest.mark.heavy]),  # odd sizes round down
    ],
)
def test_tiled_encode_decode_match_diffusers(tiled, frames, batch, height, width, slicing, overlap_w):
    vae, ours = tiled
    if overlap_w:
        vae.enable_tiling(**{**TILES, "tile_overlap_factor_width": overlap_w})
        ours.enable_tiling(**{**TILES, "tile_overlap_factor_width": overlap_w})
    if slicing:
        vae.enable_slicing()
        ours.enable_slicing()
    x = video(batch, frames, height, width, seed=frames)
    what = f"{frames}f batch {batch} {height}x{width}"
    expected = vae.encode(x).latent_dist.mean
    assert_close(ours.encode(x).latent_dist.mean, expected, FP32, f"tiled encode {what}")
    assert_close(ours.decode(expected).sample, vae.decode(expected).sample, FP32, f"tiled decode {what}")


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # 73 s on 2 cores (AMD): out of CI's time
def test_exact_tile_shapes_match_diffusers_with_a_program_per_shape(tiled):
    vae, ours = tiled
    ours.uniform_tiles = False
    try:
        x = video(1, 9, 48, 40, seed=2)
        expected = vae.encode(x).latent_dist.mean
        assert_close(ours.encode(x).latent_dist.mean, expected, FP32, "exact-shape tiled encode")
        before = {s["input_shapes"][0] for s in ours.compile_stats() if batch_program(s["name"]) == "decoder"}
        assert_close(ours.decode(expected).sample, vae.decode(expected).sample, FP32, "exact-shape tiled decode")
        shapes = {s["input_shapes"][0] for s in ours.compile_stats() if batch_program(s["name"]) == "decoder"} - before
        assert {(1, 4, 3, 4, 3), (1, 4, 3, 4, 1), (1, 4, 3, 3, 3), (1, 4, 3, 3, 1)} <= shapes | before
    finally:
        ours.uniform_tiles = True


def test_tiled_device_input_stays_on_device(tiled):
    vae, ours = tiled
    z = vae.encode(video(1, 9, 48, 40)).latent_dist.mean
    expected = ours.decode(z).sample
    z_device = ours._family.lowered.env.j2t_iso(jax.device_put(z.numpy()))
    ours.decode(z_device)  # compiles the padding and block slicing once, outside the guard
    with jax.transfer_guard("disallow"):
        out = ours.decode(z_device).sample
    assert torch.equal(torch.from_numpy(jax.device_get(out._elem).copy()), expected)
    assert_close(expected, vae.decode(z).sample, FP32, "tiled decode of device input")


def programs(stats):
    return sorted({(batch_program(s["name"]), s["input_shapes"][0]) for s in stats})


@pytest.fixture
def fresh():
    vae = TorchaxVAE(random_vae("tiny"))
    vae.enable_tiling(**TILES)
    return vae


@pytest.mark.slow  # 44 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_tiled_decode_uses_two_programs_at_any_size_and_length(fresh):
    shapes = [(1, 4, latent, h, w) for latent in (7, 13, 25) for h, w in ((6, 5), (9, 8), (16, 21))]
    for shape in shapes:
        fresh.precompile("decode", shape)
    assert programs(fresh.compile_stats()) == [
        ("decoder/tile", (1, 4, 3, 4, 3)),
        ("decoder/tile+conv_cache", (1, 4, 2, 4, 3)),
    ]


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # 54 s on 2 cores (AMD): out of CI's time
def test_tiled_decode_memory_does_not_grow_with_the_video(fresh):
    def peak_temp(shape):
        return max(s["temp_bytes"] for s in fresh.precompile("decode", shape))

    # 49 frames (13 latent) at a tile grid of 2x2 tiles, then 4x5 tiles, then 97 frames: the same programs.
    base = peak_temp((1, 4, 13, 6, 5))
    assert peak_temp((1, 4, 13, 12, 14)) == base
    assert peak_temp((1, 4, 25, 12, 14)) == base
    # 13 frames (4 latent) batch as 2 + 2 instead of 3 + 2 ... + 2: smaller, never larger.
    assert peak_temp((1, 4, 4, 12, 14)) <= base
    untiled = TorchaxVAE(random_vae("tiny"))
    untiled.disable_tiling()
    assert max(s["temp_bytes"] for s in untiled.precompile("decode", (1, 4, 13, 12, 14))) > 2 * base


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_tiled_encode_uses_two_programs_per_first_batch_length(fresh):
    for shape in [(1, 3, 17, 48, 40), (1, 3, 17, 64, 90), (1, 3, 33, 40, 64)]:
        fresh.precompile("encode", shape)
    assert programs(fresh.compile_stats()) == [
        ("encoder/tile", (1, 3, 9, 32, 24)),
        ("encoder/tile+conv_cache", (1, 3, 8, 32, 24)),
    ]


def test_precompile_then_run_compiles_nothing(fresh):
    stats = fresh.precompile("decode", (1, 4, 5, 6, 5))
    assert programs(stats) == [("decoder/tile", (1, 4, 3, 4, 3)), ("decoder/tile+conv_cache", (1, 4, 2, 4, 3))]
    assert all(s["compile_seconds"] > 0 for s in stats) and max(s["temp_bytes"] for s in stats) > 0
    before = fresh.compile_stats()
    fresh.decode(torch.randn(1, 4, 5, 6, 5))
    assert fresh.compile_stats() == before
    assert programs(fresh.precompile("decode", (1, 4, 5, 6, 5))) == programs(stats)  # still reports what it uses


def test_precompile_rejects_bad_requests(fresh):
    with pytest.raises(ValueError, match="'encode' or 'decode'"):
        fresh.precompile("enc", (1, 3, 9, 32, 32))
    with pytest.raises(ValueError, match="expects 4"):
        fresh.precompile("decode", (1, 3, 9, 32, 32))
    with pytest.raises(ValueError, match="5-D"):
        fresh.precompile("decode", (4, 9, 32, 32))
    assert fresh.compile_stats() == []


# ----- automatic tiling -----


@pytest.fixture
def auto(tiny_vae):
    """TorchaxVAE with the TILES sizes, left in "auto" mode, and the PyTorch model for reference."""
    ours = TorchaxVAE(tiny_vae)
    ours.enable_tiling(**TILES)
    ours.tiling_mode = "auto"
    return tiny_vae, ours


def test_auto_tiles_when_the_untiled_program_would_not_fit(auto, caplog):
    vae, ours = auto
    ours.memory_budget = 1  # nothing fits: tile
    z = torch.randn(1, 4, 3, 6, 5)
    with caplog.at_level(logging.WARNING, logger="torchax_vae"):
        actual = ours.decode(z).sample
        ours.decode(z)
    assert [r.getMessage() for r in caplog.records if "tiling it" in r.getMessage()] and len(caplog.records) == 1
    vae.enable_tiling(**TILES)
    try:
        assert_close(actual, vae.decode(z).sample, FP32, "auto-tiled decode")
    finally:
        vae.disable_tiling()
    names = {batch_program(s["name"]) for s in ours.compile_stats()}
    assert names == {"decoder", "decoder/tile"}  # "decoder": compiled only to measure it


def test_auto_runs_untiled_when_it_fits(auto):
    vae, ours = auto
    ours.memory_budget = 1 << 40
    z = torch.randn(1, 4, 3, 6, 5)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "auto, fits: untiled decode")
    assert {batch_program(s["name"]) for s in ours.compile_stats()} == {"decoder"}


def test_auto_default_budget_fits_a_small_video_on_this_host(auto):
    _, ours = auto
    ours.decode(torch.randn(1, 4, 3, 6, 5))
    assert {batch_program(s["name"]) for s in ours.compile_stats()} == {"decoder"}


def test_disable_tiling_forces_untiled(auto):
    vae, ours = auto
    ours.memory_budget = 1
    ours.disable_tiling()
    z = torch.randn(1, 4, 3, 6, 5)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "tiling off: untiled decode")
    assert {batch_program(s["name"]) for s in ours.compile_stats()} == {"decoder"}


def test_tiling_mode_and_budget_are_checked(tiny_vae):
    with pytest.raises(ValueError, match="memory_budget"):
        TorchaxVAE(tiny_vae, memory_budget=-5)
    ours = TorchaxVAE(tiny_vae)
    assert ours.tiling_mode == "auto" and not ours.use_tiling
    with pytest.raises(ValueError, match="'on', 'off' or 'auto'"):
        ours.tiling_mode = "sometimes"
    ours.enable_tiling()
    assert ours.tiling_mode == "on" and ours.use_tiling
    ours.use_tiling = False
    assert ours.tiling_mode == "off"


# ----- official config -----


@by_hand  # 48 s on 2 cores: out of CI's time; the tiny model's tiling cases stay in CI
def test_official_tiled_matches_diffusers(official_vae):
    ours = TorchaxVAE(official_vae)
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=48)
    for m in (official_vae, ours):
        m.enable_tiling(**tiles)
    try:
        x = video(1, 9, 48, 72, seed=3)  # 2x2 tiles, short right and bottom ones
        expected = official_vae.encode(x).latent_dist.mean
        assert_close(ours.encode(x).latent_dist.mean, expected, FP32, "official tiled encode")
        assert_close(ours.decode(expected).sample, official_vae.decode(expected).sample, FP32, "official tiled decode")
    finally:
        official_vae.disable_tiling()

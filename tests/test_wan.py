"""AutoencoderKLWan (Wan 2.1 and 2.2) through TorchaxVAE against the same model in plain PyTorch."""

import pytest
import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import WanResample
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.models.wan import WanVAE, encode_chunks

FP32 = TOLERANCE[torch.float32]
TINY = ["wan-tiny", "wan2.2-tiny"]
SETTINGS = ("use_slicing", "use_tiling", "tile_sample_min_height", "tile_sample_min_width",
            "tile_sample_stride_height", "tile_sample_stride_width")
TILING = {True: "tiling_mode", False: "use_tiling"}  # ours has a mode ("auto" by default), diffusers a flag


@pytest.fixture(scope="module")
def _models():
    models = {}
    for name in TINY:
        vae = random_vae(name)
        models[name] = (vae, TorchaxVAE(vae))
    return models


# Wan 2.2's tiny config runs every `pair` test with -m heavy (about 4 min on 2 cores: out of CI's time, by hand);
# the default suite checks it in test_wan22_tiny_fp32, the slow set its released architecture and its mesh
@pytest.fixture(params=["wan-tiny", pytest.param("wan2.2-tiny", marks=[pytest.mark.slow, pytest.mark.heavy])])
def pair(request, _models):
    """(diffusers' model, our wrapper of it), shared by the module; settings restored after each test."""
    vae, ours = _models[request.param]
    saved = [{k: getattr(m, k) for k in SETTINGS + (TILING[m is ours],)} for m in (vae, ours)]
    yield vae, ours
    for model, settings in zip((vae, ours), saved):
        for key, value in settings.items():
            setattr(model, key, value)


def video(vae, batch, frames, height, width, seed=0):
    patch = vae.config.patch_size or 1
    channels = vae.config.in_channels // (patch * patch)  # Wan 2.2 patchifies 3 channels into 12
    return torch.randn(batch, channels, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_picks_the_wan_adapter(_models):
    vae, ours = _models["wan-tiny"]
    assert type(ours) is WanVAE and isinstance(ours, TorchaxVAE)
    assert ours.config is vae.config and ours.z_dim == vae.z_dim
    assert ours.temperal_downsample == vae.temperal_downsample and ours.temperal_upsample == vae.temperal_upsample
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio


@pytest.mark.parametrize("frames", [1, 5, 9, 17])
def test_tiny_fp32(pair, frames):
    vae, ours = pair
    check_encode_decode(vae, ours, video(vae, 1, frames, 32, 48), f"{vae.config.z_dim}ch {frames}f")


@pytest.mark.slow  # 26 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_wan22_tiny_fp32(_models):
    """Wan 2.2's residual, patchified architecture (diffusers-style tiny config), one chunked length each way."""
    vae, ours = _models["wan2.2-tiny"]
    check_encode_decode(vae, ours, video(vae, 1, 5, 32, 32, seed=5), "wan2.2-tiny 5f")


@pytest.mark.parametrize("frames", [2, 6])
def test_frames_past_the_last_chunk_are_dropped_as_diffusers_does(pair, frames):
    vae, ours = pair
    x = video(vae, 1, frames, 32, 32, seed=frames)
    expected = vae.encode(x).latent_dist.mean
    assert expected.shape[2] == len(encode_chunks(frames))
    assert_close(ours.encode(x).latent_dist.mean, expected, FP32, f"{frames} frames")


def test_an_input_view_with_odd_strides_then_a_plain_one(_models):
    """A video stored as [B, F, C, H, W] and passed permuted to [B, C, F, H, W] (as Cosmos 2.5's pipelines pass
    control videos), then the same shape stored plainly: its first 1-frame chunk is a view that torch calls
    contiguous but whose size-1 frame axis has the stride of 3 channels. One program serves both inputs (it refused
    the second with "compiled for input layouts that disagree"), and both equal diffusers'."""
    vae, ours = _models["wan-tiny"]
    frames = video(vae, 1, 5, 32, 32)
    for x in (frames.permute(0, 2, 1, 3, 4).contiguous().permute(0, 2, 1, 3, 4), frames):
        with torch.no_grad():
            expected, got = vae.encode(x).latent_dist.mode(), ours.encode(x).latent_dist.mode()
        assert_close(got, expected, FP32, f"encode of strides {x.stride()}")


@pytest.mark.slow  # 32 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_odd_sizes(pair):
    vae, ours = pair
    # Wan 2.1 takes any size; Wan 2.2's encoder needs multiples of 16 (diffusers' too)
    height, width = (26, 38) if not vae.config.is_residual else (48, 80)
    check_encode_decode(vae, ours, video(vae, 1, 5, height, width, seed=2), "odd size")
    z = torch.randn(1, vae.config.z_dim, 2, 3, 5)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "odd latent size")


@pytest.mark.slow  # 29 + 12 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize("slicing", [False, True], ids=["whole", "sliced"])
def test_batch_of_two(pair, slicing):
    vae, ours = pair
    if slicing:
        vae.enable_slicing()
        ours.enable_slicing()
    check_encode_decode(vae, ours, video(vae, 2, 5, 32, 32, seed=3), f"batch 2 slicing={slicing}")


def test_forward_sample_and_return_dict(pair):
    vae, ours = pair
    x = video(vae, 1, 5, 32, 32, seed=4)
    expected = vae(x, sample_posterior=True, generator=torch.Generator().manual_seed(3)).sample
    actual = ours(x, sample_posterior=True, generator=torch.Generator().manual_seed(3)).sample
    assert_close(actual, expected, FP32, "forward(sample_posterior=True)")
    (posterior,) = ours.encode(x, return_dict=False)
    (decoded,) = ours.decode(posterior.mean, return_dict=False)
    (reference,) = vae.decode(vae.encode(x).latent_dist.mean, return_dict=False)
    assert_close(decoded, reference, FP32, "return_dict=False")


def test_cpu_lowering_uses_frame_convs_only_in_bf16():
    """fp32: XLA:CPU's stock 3-D convolution (faster for Wan); bf16: per-frame ones accumulating in fp32."""
    import jax
    import jax.numpy as jnp

    from torchax_vae.engine.lowering import jax_weights

    vae = random_vae("wan-tiny")
    lowered = TorchaxVAE(vae)._family.lowered  # traced for this CPU
    for dtype, three_d in ((jnp.float32, True), (jnp.bfloat16, False)):
        weights = {k: v for k, v in jax_weights(vae, dtype).items() if k in ("decoder", "post_quant_conv")}
        z = jax.ShapeDtypeStruct((1, 16, 1, 2, 2), dtype)
        hlo = jax.jit(lambda w, z: lowered.decode_step(w, z, None)).lower(weights, z).as_text()
        assert ("[b, f, 0, 1, 2]" in hlo) == three_d, dtype


@pytest.mark.parametrize("name", ["wan-tiny", pytest.param("wan2.2-tiny", marks=[pytest.mark.slow, pytest.mark.heavy])])
def test_bf16(name):  # (Wan 2.2's: 50 s on 2 cores, by hand; its fp32 parity is the slow set's)
    vae = random_vae(name)
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(vae, 1, 9, 32, 32), f"{name} 9f")


def test_any_length_compiles_two_programs_each_way(pair):
    """Two per direction (the first call, the rest), and one for a single-call input (an image: no cache out)."""
    vae, ours = pair
    ours = TorchaxVAE(vae)  # a fresh cache of programs
    for frames in range(1, 6):
        ours.decode(torch.randn(1, vae.config.z_dim, frames, 2, 3))
    names = sorted(s["name"] for s in ours.compile_stats())
    assert names == ["decoder", "decoder+feat_cache", "decoder/alone"]
    for frames in (6, 9, 13):
        ours.decode(torch.randn(1, vae.config.z_dim, frames, 2, 3))
    for frames in (1, 5, 9, 17, 21):
        ours.encode(video(vae, 1, frames, 32, 32))
    names = sorted(s["name"] for s in ours.compile_stats())
    assert names == ["decoder", "decoder+feat_cache", "decoder/alone", "encoder", "encoder+feat_cache",
                     "encoder/alone"], names


def test_precompile_compiles_what_a_call_needs(pair):
    vae, ours = pair
    ours = TorchaxVAE(vae)
    stats = ours.precompile("decode", (1, vae.config.z_dim, 4, 2, 3))
    assert sorted(s["name"] for s in stats) == ["decoder", "decoder+feat_cache"]
    before = len(ours.compile_stats())
    z = torch.randn(1, vae.config.z_dim, 4, 2, 3)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "decode after precompile")
    assert len(ours.compile_stats()) == before


@pytest.mark.parametrize("what", [pytest.param("encode", marks=pytest.mark.slow),
                                  pytest.param("decode", marks=pytest.mark.slow)])  # 14 s each on 2 cores
def test_tiling_equals_diffusers_tiled_including_edge_tiles(pair, what):
    vae, ours = pair
    patch = vae.config.patch_size or 1
    # sample tiles of 32 every 24 (patchified units for Wan 2.2's encoder, as diffusers counts them):
    # grids whose right and bottom tiles are cut short by the edge, so every tile shape runs
    for model in (vae, ours):
        model.enable_tiling(tile_sample_min_height=32, tile_sample_min_width=32,
                            tile_sample_stride_height=24, tile_sample_stride_width=24)
    if what == "encode":
        x = video(vae, 1, 5, 48 * patch, 40 * patch, seed=5)
        expected, actual = vae.encode(x).latent_dist.mean, ours.encode(x).latent_dist.mean
    else:
        ratio = vae.config.scale_factor_spatial
        z = torch.randn(1, vae.config.z_dim, 2, 48 // ratio, 40 // ratio)
        expected, actual = vae.decode(z).sample, ours.decode(z).sample
    assert_close(actual, expected, FP32, f"tiled {what}")
    assert any("/tile" in s["name"] for s in ours.compile_stats()), "no tile program ran"


@pytest.mark.slow  # 17 s on 2 cores (default-suite time); auto tiling's rule is tested on CogVideoX there
def test_auto_tiles_what_would_not_fit_as_diffusers_tiles(caplog):
    """The same rule as CogVideoX: "auto" (the default) tiles an input larger than a tile when it would not fit."""
    import logging

    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    assert ours.tiling_mode == "auto" and not ours.use_tiling
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=24, tile_sample_stride_width=24)
    for name, value in tiles.items():  # tile sizes, without enable_tiling (which forces tiling on)
        setattr(ours, name, value)
    z = torch.randn(1, 16, 2, 6, 5)
    ours.memory_budget = 1 << 40
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "auto, fits: untiled decode")
    assert not any("/tile" in s["name"] for s in ours.compile_stats())
    ours.memory_budget = 1  # nothing fits
    with caplog.at_level(logging.WARNING, logger="torchax_vae"):
        actual = ours.decode(z).sample
    assert any("tiling it" in r.getMessage() for r in caplog.records)
    vae.enable_tiling(**tiles)
    assert_close(actual, vae.decode(z).sample, FP32, "auto-tiled decode")
    ours.disable_tiling()
    assert ours.tiling_mode == "off" and not ours.use_tiling


def test_bad_input_is_refused_before_compiling(_models):
    vae, ours = _models["wan2.2-tiny"]
    fresh = TorchaxVAE(vae)
    with pytest.raises(ValueError, match="divisible by 16"):
        fresh.encode(torch.zeros(1, 3, 1, 32, 33))
    with pytest.raises(ValueError, match="divisible by 16"):
        fresh.encode(torch.zeros(1, 3, 1, 40, 32))
    with pytest.raises(ValueError, match="has 12 channels .* encoder expects 3"):
        fresh.encode(torch.zeros(1, 12, 1, 32, 32))
    with pytest.raises(ValueError, match="has 16 channels .* decoder expects 4"):
        fresh.decode(torch.zeros(1, 16, 1, 2, 2))
    assert fresh.compile_stats() == []


def test_users_module_is_untouched_and_keeps_working():
    vae = random_vae("wan-tiny")
    state = {k: v.clone() for k, v in vae.state_dict().items()}
    ours = TorchaxVAE(vae)
    z = torch.randn(1, 16, 3, 2, 2)
    before = ours.decode(z).sample
    assert all(not m._forward_pre_hooks for m in vae.modules() if isinstance(m, WanResample))
    assert all(torch.equal(state[k], v) for k, v in vae.state_dict().items())
    assert not hasattr(vae, "_feat_map")  # diffusers' own cache state never set on the user's module
    assert_close(before, vae.decode(z).sample, FP32, "decode")
    with torch.no_grad():
        for p in vae.parameters():
            p.mul_(0.5)  # an in-place edit of the user's weights must not reach ours
    assert torch.equal(ours.decode(z).sample, before)


def test_latent_shape_and_normalization_match_the_pipelines(_models):
    for name in TINY:
        vae, ours = _models[name]
        x = video(vae, 1, 9, 64, 96)
        assert ours.latent_shape(tuple(x.shape)) == tuple(vae.encode(x).latent_dist.mean.shape)
        z = torch.randn(ours.latent_shape(tuple(x.shape)))
        shape = (1, vae.config.z_dim, 1, 1, 1)
        mean = torch.tensor(vae.config.latents_mean).view(shape)
        inv_std = 1.0 / torch.tensor(vae.config.latents_std).view(shape)
        assert torch.equal(ours.unscale_latents(z), z / inv_std + mean)  # WanPipeline before decode
        assert torch.equal(ours.scale_latents(z), (z - mean) * inv_std)  # WanImageToVideoPipeline after encode


@pytest.mark.slow
# heavy, both (out of CI's time since CI also runs its diffusers files on plain diffusers): wan2.1 128 s, wan2.2 79 s
# on 2 cores; Wan's code paths run in CI on the tiny configs, and the released sizes' fp32 parity by hand
@pytest.mark.parametrize("name", [pytest.param("wan2.1", marks=[pytest.mark.heavy, pytest.mark.by_hand]),
                                  pytest.param("wan2.2", marks=[pytest.mark.heavy, pytest.mark.by_hand])])
def test_official_fp32_and_bf16(name):
    """The released architectures (seeded random weights), odd latent sizes (3x5), 1 to 17 frames."""
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    ratio = vae.config.scale_factor_spatial
    # Wan 2.2 runs 1 and 5 frames (the first call, then a steady chunk: all six programs): its 17 frames took
    # most of 13 minutes of the slow set on a 2-core AMD EPYC (scripts/parity.py covers more: docs/design/wan.md).
    for frames in (1, 5, 9, 17) if name == "wan2.1" else (1, 5):
        check_encode_decode(vae, ours, video(vae, 1, frames, 3 * ratio, 5 * ratio, seed=frames), f"{name} {frames}f")
    assert len(ours.compile_stats()) == 6  # two programs each way whatever the length, and one for 1 frame
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(vae, 1, 5, 3 * ratio, 5 * ratio), f"{name} 5f")

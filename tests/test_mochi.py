"""AutoencoderKLMochi through TorchaxVAE against the same model in plain PyTorch. Its pipeline's output:
tests/diffusers/test_pipeline_outputs.py (diffusers' own fast test, in CI)."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, check_tiled, pair_fixture, random_vae, TOLERANCE
from round_trip import video_round_trip

from torchax_vae import TorchaxVAE
from torchax_vae.models.mochi import MochiVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("mochi-tiny")


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_what_pipelines_read(pair):
    vae, ours = pair
    assert type(ours) is MochiVAE
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio == 8
    assert ours.temporal_compression_ratio == vae.temporal_compression_ratio == 6
    assert ours.video_channels == 3 and vae.config.in_channels == 15  # the encoder adds the Fourier features
    assert ours.tile_sample_stride_height == vae.tile_sample_stride_height and ours.drop_last_temporal_frames
    for frames, height in ((1, 16), (8, 20), (13, 16)):  # any length and size: diffusers' convolutions floor
        x = video(1, frames, height, 24)
        assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mean.shape)


@pytest.mark.parametrize("frames", [1, 7, pytest.param(13, marks=pytest.mark.slow)])
def test_tiny_fp32(pair, frames):
    vae, ours = pair
    check_encode_decode(vae, ours, video(1, frames, 16, 24, seed=frames), f"mochi-tiny {frames}f")


def test_decoded_frames_as_diffusers_drops_them(pair):
    """ratio frames per latent frame, the first ratio - 1 dropped (drop_last_temporal_frames), or kept when off."""
    vae, ours = pair
    z = torch.randn(1, 4, 3, 2, 3, generator=torch.Generator().manual_seed(3))
    assert ours.decode(z).sample.shape[2] == 13
    vae.drop_last_temporal_frames = ours.drop_last_temporal_frames = False
    try:
        decoded = ours.decode(z).sample
        assert decoded.shape[2] == 18
        assert_close(decoded, vae.decode(z).sample, FP32, "decode, every frame kept")
    finally:
        vae.drop_last_temporal_frames = ours.drop_last_temporal_frames = True


@pytest.mark.slow  # 36 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_a_batch_sliced_or_not_and_one_program_per_clip():
    vae = random_vae("mochi-tiny")
    ours = TorchaxVAE(vae)
    x = video(2, 7, 16, 16, seed=2)
    check_encode_decode(vae, ours, x, "mochi-tiny batch 2")
    ours.enable_slicing()
    check_encode_decode(vae, ours, x, "mochi-tiny batch 2, sliced")
    ours.disable_slicing()
    ours = TorchaxVAE(vae)  # whole clips, as in diffusers: one program per (frames, size), compiled once
    for frames in (1, 2, 3, 2, 1):
        ours.decode(torch.randn(1, 4, frames, 2, 2, generator=torch.Generator().manual_seed(frames)))
    assert sorted(s["input_shapes"][0][2] for s in ours.compile_stats()) == [1, 2, 3]


@pytest.mark.parametrize("tiles", [pytest.param(dict(tile_sample_min_height=16, tile_sample_min_width=16,
                                                     tile_sample_stride_height=8, tile_sample_stride_width=8),
                                                marks=pytest.mark.slow),  # 11 s
                                   pytest.param(dict(tile_sample_min_height=24, tile_sample_min_width=16,
                                                     tile_sample_stride_height=16, tile_sample_stride_width=8),
                                                marks=[pytest.mark.slow, pytest.mark.heavy])])  # 33 s: by hand
def test_tiling_equals_diffusers(tiles):
    """diffusers' own tiling arguments for this class: tile sizes and strides, blended over their difference."""
    vae = random_vae("mochi-tiny")
    # rel 1e-4: the blended decode is 4.1e-5 from diffusers' (peak 0.71) on a 2-core AMX Xeon (2026-12-08), over
    # 5e-5 x peak; 1e-4 x peak (7.1e-5) still fails a result 0.02 % off (1.4e-4)
    compiled = check_tiled(vae, TorchaxVAE(vae), video(1, 7, 40, 48, seed=3), tiles, rel=1e-4)
    assert set(compiled) >= {"encoder/tile", "decoder/tile+drop=5"}


@by_hand  # 73 s on 2 cores (AMD): out of CI's time (the plan tests compile the other families for TPUs)
def test_plans_for_tpus(pair):
    """libtpu 0.0.42 failed to lay out the per-frame GroupNorm's reductions (torchax_vae/patches/group_norm.py
    `_dot_group_norm`): the encoder compiles for v6e-8, its work split evenly."""
    _, ours = pair
    plan = ours.plan("encode", (1, 3, 7, 64, 256), "v6e-8")
    assert plan.fits and plan.sharding_efficiency > 0.9, plan.sharding_efficiency


def test_framewise_decoding_is_refused():
    vae = random_vae("mochi-tiny")
    vae._enable_framewise_decoding()
    with pytest.raises(ValueError, match="framewise"):
        TorchaxVAE(vae)


@pytest.mark.slow  # 24 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_bf16():
    vae = random_vae("mochi-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 7, 16, 16), "mochi-tiny 7f")


@by_hand  # 39 s: mochi-tiny has the same blocks (the released config: docs/results/parity.md)
def test_official_fp32_and_bf16():
    """The released Mochi 1 VAE's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("mochi")
    ours = TorchaxVAE(vae)
    check_encode_decode(vae, ours, video(1, 7, 32, 32, seed=5), "mochi 7f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 7, 32, 32), "mochi 7f")


@pytest.mark.slow  # 14 s: the command's processes (CI: every sixth run)
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """MochiPipeline(output_type="latent") returns [B, C, F, H, W], normalized by latents_mean and latents_std."""
    vae = random_vae("mochi-pipe-tiny")
    mean = torch.tensor(vae.config.latents_mean).view(1, 12, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, 12, 1, 1, 1)
    # MochiPipeline: latents * std / scaling_factor + mean, then decode
    video_round_trip(tmp_path, capsys, vae, (1, 12, 2, 2, 3), lambda z: z * std / vae.config.scaling_factor + mean,
                     frames=(7, 16, 24, 3), warmup="7,16,24")

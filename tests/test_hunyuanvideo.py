"""AutoencoderKLHunyuanVideo through TorchaxVAE against the same model in plain PyTorch. Its pipeline's output:
tests/diffusers/test_pipeline_outputs.py (diffusers' own fast test, in CI)."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, check_tiled, pair_fixture, random_vae, TOLERANCE
from round_trip import video_round_trip

from torchax_vae import TorchaxVAE
from torchax_vae.models.hunyuanvideo import HunyuanVideoVAE
from torchax_vae.models.windows import windows

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("hunyuan-tiny")


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_windows(pair):
    vae, ours = pair
    assert type(ours) is HunyuanVideoVAE
    assert ours.use_framewise_decoding and ours.tile_sample_min_num_frames == vae.tile_sample_min_num_frames
    assert windows(6, 4, 3) == [(0, 5), (3, 6)]  # diffusers' latent windows: 4 + 1 frames every 3


@pytest.mark.parametrize("frames", [1, 9, 21])  # one call, one call, and frame windows (21 > 16) both ways
def test_tiny_fp32(pair, frames):
    vae, ours = pair
    check_encode_decode(vae, ours, video(1, frames, 32, 32, seed=frames), f"hunyuan-tiny {frames}f")


@pytest.mark.slow  # LTX-2's test of the same frame-window path runs in the default suite
def test_decoding_any_length_compiles_a_bounded_set_of_programs():
    """Programs follow the window shapes, not the video: after 1..8 latent frames, longer videos compile nothing."""
    vae = random_vae("hunyuan-tiny")
    ours = TorchaxVAE(vae)
    for frames in range(1, 9):
        ours.decode(torch.randn(1, 4, frames, 2, 2))
    compiled = len(ours.compile_stats())
    assert compiled == 5  # whole clips of 1-4 latent frames, windows of 5 (shorter last windows: the same shapes)
    for frames in (9, 13, 21, 33):
        z = torch.randn(1, 4, frames, 2, 2, generator=torch.Generator().manual_seed(frames))
        assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, f"decode of {frames} latent frames")
    assert len(ours.compile_stats()) == compiled


@pytest.mark.slow  # 52 s on 2 cores: 3 x 2 tile shapes, two window shapes, both ways (windows alone: the default
@pytest.mark.heavy  # suite; LTX-2's windows with tiles and slicing: the slow set)
def test_slicing_and_tiling_within_windows_equal_diffusers(pair):
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=24,
                tile_sample_stride_width=24)
    check_tiled(*pair, video(2, 17, 48, 40, seed=3), tiles, slicing=True, what="frame windows")


@pytest.mark.slow  # 29 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_bf16():
    vae = random_vae("hunyuan-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 9, 32, 32), "hunyuan-tiny 9f")


@by_hand  # 36 s: hunyuan-tiny has the same blocks (the released config: docs/results/parity.md)
def test_official_fp32_and_bf16():
    """The released HunyuanVideo VAE's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("hunyuanvideo")
    ours = TorchaxVAE(vae)
    for frames in (1, 5):
        check_encode_decode(vae, ours, video(1, frames, 16, 24, seed=frames), f"hunyuanvideo {frames}f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 5, 16, 24), "hunyuanvideo 5f")


@pytest.mark.slow  # 30 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.heavy  # out of CI's time: Allegro's, Mochi's, MAGVIT's and HunyuanVideo 1.5's round trips stay
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """HunyuanVideoPipeline(output_type="latent") returns [B, C, F, H, W], scaled by scaling_factor."""
    vae = random_vae("hunyuan-tiny")  # HunyuanVideoPipeline: latents / scaling_factor, then decode
    video_round_trip(tmp_path, capsys, vae, (1, 4, 3, 2, 3), lambda z: z / vae.config.scaling_factor,
                     frames=(9, 16, 24, 3))

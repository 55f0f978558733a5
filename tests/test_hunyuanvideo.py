"""AutoencoderKLHunyuanVideo through TorchaxVAE against the same model in plain PyTorch, and in HunyuanVideoPipeline."""

import pytest
import torch
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.models.hunyuanvideo import HunyuanVideoVAE
from torchax_vae.models.windows import windows

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module")
def pair():
    vae = random_vae("hunyuan-tiny")
    return vae, TorchaxVAE(vae)


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
    vae, ours = pair
    x = video(2, 17, 48, 40, seed=3)
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=24,
                 tile_sample_stride_width=24)
    try:
        for model in (vae, ours):
            model.enable_slicing()
            model.enable_tiling(**tiles)
        expected = vae.encode(x).latent_dist.mean
        assert_close(ours.encode(x).latent_dist.mean, expected, FP32, "sliced, tiled, windowed encode")
        assert_close(ours.decode(expected).sample, vae.decode(expected).sample, FP32, "sliced, tiled, windowed decode")
    finally:
        for model in (vae, ours):
            model.disable_slicing()
            model.disable_tiling()


@pytest.mark.slow  # 29 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_bf16():
    vae = random_vae("hunyuan-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 9, 32, 32), "hunyuan-tiny 9f")


@pytest.mark.slow
@pytest.mark.heavy  # 36 s: hunyuan-tiny has the same blocks (the released config: docs/results/parity.md)
def test_official_fp32_and_bf16():
    """The released HunyuanVideo VAE's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("hunyuanvideo")
    ours = TorchaxVAE(vae)
    for frames in (1, 5):
        check_encode_decode(vae, ours, video(1, frames, 16, 24, seed=frames), f"hunyuanvideo {frames}f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 5, 16, 24), "hunyuanvideo 5f")


def test_hunyuanvideo_pipeline_with_the_vae_swapped():
    from diffusers import FlowMatchEulerDiscreteScheduler, HunyuanVideoPipeline, HunyuanVideoTransformer3DModel

    torch.manual_seed(0)  # as diffusers' HunyuanVideoPipeline tests build it, prompt embeddings given
    transformer = HunyuanVideoTransformer3DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=10, num_layers=1,
        num_single_layers=1, num_refiner_layers=1, patch_size=1, patch_size_t=1, guidance_embeds=True,
        text_embed_dim=16, pooled_projection_dim=8, rope_axes_dim=(2, 4, 4),
    ).eval()
    vae = random_vae("hunyuan-tiny")
    pipe = HunyuanVideoPipeline(transformer=transformer, vae=vae, scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0),
                                text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None)
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    inputs = dict(prompt_embeds=torch.randn(1, 7, 16, generator=generator),
                  pooled_prompt_embeds=torch.randn(1, 8, generator=generator),
                  prompt_attention_mask=torch.ones(1, 7, dtype=torch.long),
                  num_inference_steps=2, height=16, width=16, num_frames=9, output_type="pt")
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
        pipe.vae = TorchaxVAE(vae)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
    assert actual.shape == (1, 9, 3, 16, 16)
    assert_close(actual, expected, FP32, "HunyuanVideoPipeline frames")


@pytest.mark.slow  # 30 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.heavy  # out of CI's time: Allegro's, Mochi's, MAGVIT's and HunyuanVideo 1.5's round trips stay
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """HunyuanVideoPipeline(output_type="latent") returns [B, C, F, H, W], scaled by scaling_factor."""
    import numpy as np

    from torchax_vae.cli import main

    vae = random_vae("hunyuan-tiny")
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = torch.randn(1, 4, 3, 2, 3, generator=torch.Generator().manual_seed(0))
    torch.save(z, tmp_path / "latents.pt")
    args = ["--model", str(tmp_path / "model"), "--no-cache", "--json"]
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "video.npy"), *args]) == 0
    capsys.readouterr()
    with torch.no_grad():  # HunyuanVideoPipeline: latents / scaling_factor, then decode
        expected = vae.decode(z / vae.config.scaling_factor).sample[0]
    expected = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()
    frames = np.load(tmp_path / "video.npy")
    assert frames.shape == (9, 16, 24, 3)
    assert np.abs(frames.astype(int) - expected.astype(int)).max() <= 1
    from torchax_vae.media import files

    files.write_mp4(tmp_path / "video.mp4", frames)
    assert main(["encode", str(tmp_path / "video.mp4"), "-o", str(tmp_path / "back.pt"), *args]) == 0
    assert tuple(torch.load(tmp_path / "back.pt").shape) == (1, 4, 3, 2, 3)  # the pipelines' [B, C, F, H, W]

"""AutoencoderKLMagvit through TorchaxVAE against the same model in plain PyTorch, and in EasyAnimatePipeline."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, check_tiled, random_vae, TOLERANCE
from round_trip import video_round_trip

from torchax_vae import TorchaxVAE
from torchax_vae.models.magvit import MagvitVAE, frame_batches

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module", params=["magvit-tiny", "magvit-clipnorm-tiny"])
def pair(request):
    vae = random_vae(request.param)
    return request.param, vae, TorchaxVAE(vae)


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_what_pipelines_read(pair):
    _, vae, ours = pair
    assert type(ours) is MagvitVAE
    assert (ours.spatial_compression_ratio, ours.temporal_compression_ratio) == (8, 4)
    assert (ours.num_sample_frames_batch_size, ours.num_latent_frames_batch_size) == (4, 1)
    x = video(1, 9, 16, 24)
    assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mean.shape)


@pytest.mark.parametrize("frames", [1, 9, pytest.param(17, marks=pytest.mark.slow)])
def test_tiny_fp32(pair, frames):
    """1 frame: the first call alone; 9 and 17: the module cache carried over 2 and 4 more encoder batches, 2
    and 4 more decoder calls (one latent frame each), as diffusers does."""
    name, vae, ours = pair
    check_encode_decode(vae, ours, video(1, frames, 16, 24, seed=frames), f"{name} {frames}f")


def test_frame_batches_are_diffusers():
    assert frame_batches(1, 4) == [(0, 1)]
    assert frame_batches(9, 4) == [(0, 1), (1, 5), (5, 9)]
    assert frame_batches(7, 4) == [(0, 1), (1, 5), (5, 7)]
    assert frame_batches(3, 1) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.slow  # 13 s on 2 cores
def test_a_batch_sliced_or_not_and_bounded_programs():
    vae = random_vae("magvit-tiny")
    ours = TorchaxVAE(vae)
    x = video(2, 9, 16, 16, seed=2)
    check_encode_decode(vae, ours, x, "magvit-tiny batch 2")
    ours.enable_slicing()
    check_encode_decode(vae, ours, x, "magvit-tiny batch 2, sliced")
    ours = TorchaxVAE(vae)  # the first batch and the steady one, whatever the length
    for frames in (1, 5, 9, 13):
        ours.encode(video(1, frames, 16, 16, seed=frames))
    for latent_frames in (1, 2, 4):
        ours.decode(torch.randn(1, 4, latent_frames, 2, 2, generator=torch.Generator().manual_seed(latent_frames)))
    names = sorted(s["name"] for s in ours.compile_stats())
    assert names == ["decoder", "decoder+cache", "encoder", "encoder+cache"], names


# (every tile at least 16 pixels: a 1 x 1 latent tile fails diffusers' own per-frame GroupNorm)
@pytest.mark.parametrize("tiles", [pytest.param(dict(tile_sample_min_height=32, tile_sample_min_width=32,
                                                     tile_sample_stride_height=16, tile_sample_stride_width=16),
                                                marks=pytest.mark.slow),  # 25 s
                                   pytest.param(dict(tile_sample_min_height=32, tile_sample_min_width=24,
                                                     tile_sample_stride_height=24, tile_sample_stride_width=16),
                                                marks=[pytest.mark.slow, pytest.mark.heavy])])  # 40 s
def test_tiling_equals_diffusers(tiles):
    """diffusers' own tiling arguments and arithmetic for this class (its threshold compares the width with the
    minimum height; tiled_encode keeps whole blended tiles, then crops)."""
    vae = random_vae("magvit-tiny")
    compiled = check_tiled(vae, TorchaxVAE(vae), video(1, 5, 48, 64, seed=3), tiles)
    assert set(compiled) >= {"encoder/tile", "decoder/tile+cache"}


def test_lengths_and_sizes_refused_at_the_boundary():
    ours = TorchaxVAE(random_vae("magvit-tiny"))
    with pytest.raises(ValueError, match="encodes 1 \\+ 4k frames"):
        ours.encode(video(1, 4, 16, 16))
    with pytest.raises(ValueError, match="divisible by 8"):
        ours.encode(video(1, 5, 12, 16))
    assert ours.compile_stats() == []


@pytest.mark.slow  # 32 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize("name, size", [("magvit-clipnorm-tiny", 16),
                                        pytest.param("magvit-tiny", 32, marks=[pytest.mark.slow, pytest.mark.heavy])])  # 29 s
def test_bf16(name, size):
    """magvit-tiny at 32 x 32: at 16 x 16 its per-frame GroupNorm normalizes groups of 4 values (one channel, 2 x 2)
    at its deepest level, which turns bf16 rounding into errors up to 2.8x PyTorch bf16's (mean 2.7x; GroupNorm
    alone equals PyTorch's there, bit for bit); at 32 x 32 (16 values) the max errors sit at 0.65-1.4x."""
    vae = random_vae(name)
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 9, size, size), f"{name} 9f {size}x{size}")


@by_hand  # the released architecture's whole parity row: minutes on 2 cores, out of CI's time; by hand
def test_official_fp32_and_bf16():
    """The released EasyAnimate VAE's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("magvit")
    check_encode_decode(vae, TorchaxVAE(vae), video(1, 5, 32, 32, seed=5), "magvit 5f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 5, 32, 32), "magvit 5f")


def _pipeline(vae):
    from diffusers import EasyAnimatePipeline, EasyAnimateTransformer3DModel, FlowMatchEulerDiscreteScheduler

    torch.manual_seed(0)  # as diffusers' EasyAnimatePipeline tests; prompt embeddings given instead of Qwen2-VL
    transformer = EasyAnimateTransformer3DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4, time_embed_dim=2,
        text_embed_dim=16, num_layers=1, sample_width=16, sample_height=16, patch_size=2,
    ).eval()
    pipe = EasyAnimatePipeline(vae=vae, text_encoder=None, tokenizer=None, transformer=transformer,
                               scheduler=FlowMatchEulerDiscreteScheduler())
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_easyanimate_pipeline_with_the_vae_swapped():
    vae = random_vae("magvit-clipnorm-tiny")
    pipe = _pipeline(vae)
    generator = torch.Generator().manual_seed(1)
    inputs = dict(prompt_embeds=torch.randn(1, 7, 16, generator=generator),
                  prompt_attention_mask=torch.ones(1, 7, dtype=torch.long), guidance_scale=1.0,
                  num_inference_steps=2, height=16, width=16, num_frames=5, output_type="pt")
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
        pipe.vae = TorchaxVAE(vae)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
    assert actual.shape == (1, 5, 3, 16, 16)
    assert_close(actual, expected, FP32, "EasyAnimatePipeline frames")


@pytest.mark.slow  # 12 s: the command's processes (CI: every sixth run)
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """EasyAnimatePipeline(output_type="latent") returns [B, C, F, H, W], scaled by scaling_factor."""
    vae = random_vae("magvit-tiny")  # EasyAnimatePipeline: latents / scaling_factor, then decode
    video_round_trip(tmp_path, capsys, vae, (1, 4, 2, 2, 3), lambda z: z / vae.config.scaling_factor,
                     frames=(5, 16, 24, 3), warmup="5,16,24")


def test_sliced_decode_decodes_each_video_on_its_own():
    """diffusers' sliced decode leaves the first video's module cache to the second (`_decode` does not clear it):
    a one-frame batch then fails there. Here each video decodes as it does alone, sliced or not."""
    vae = random_vae("magvit-tiny")
    ours = TorchaxVAE(vae)
    ours.enable_slicing()
    z = torch.randn(2, 4, 1, 2, 3, generator=torch.Generator().manual_seed(4))
    vae.enable_slicing()
    try:
        with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
            vae.decode(z)
    finally:
        vae.disable_slicing()
        vae._clear_conv_cache()  # (the failed call left it full)
    expected = torch.cat([vae.decode(z[i:i + 1]).sample for i in range(2)])
    assert_close(ours.decode(z).sample, expected, FP32, "sliced decode, video by video")


@pytest.mark.parametrize("cls_name, in_channels, extra, failure", [
    # latents, the mask (1 channel), the masked video's latents; it reads `vae.config.cache_mag_vae`, which
    # AutoencoderKLMagvit's config does not have
    ("EasyAnimateInpaintPipeline", 9, "inpaint", (AttributeError, "cache_mag_vae")),
    # latents, the control video's latents; it passes encode_prompt an argument encode_prompt does not take
    ("EasyAnimateControlPipeline", 8, "control", (TypeError, "text_encoder_index")),
])
def test_easyanimate_inpaint_and_control_pipelines_fail_in_diffusers_itself(cls_name, in_channels, extra, failure):
    """diffusers 0.42.1's inpaint and control variants fail with its own VAE, before or without it: a tripwire. When
    this test fails, diffusers has fixed them: compare them with `pipe.vae = TorchaxVAE(vae)` as the text-to-video
    pipeline's test does."""
    import diffusers
    from diffusers import EasyAnimateTransformer3DModel, FlowMatchEulerDiscreteScheduler

    vae = random_vae("magvit-clipnorm-tiny")
    torch.manual_seed(0)
    transformer = EasyAnimateTransformer3DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=in_channels, out_channels=4, time_embed_dim=2,
        text_embed_dim=16, num_layers=1, sample_width=16, sample_height=16, patch_size=2,
    ).eval()
    pipe = getattr(diffusers, cls_name)(vae=vae, text_encoder=None, tokenizer=None, transformer=transformer,
                                        scheduler=FlowMatchEulerDiscreteScheduler())
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    inputs = dict(prompt_embeds=torch.randn(1, 7, 16, generator=generator),
                  prompt_attention_mask=torch.ones(1, 7, dtype=torch.long), guidance_scale=1.0,
                  num_inference_steps=2, height=16, width=16, num_frames=5, output_type="pt")
    video = torch.rand(1, 3, 5, 16, 16, generator=generator)
    if extra == "inpaint":
        mask = torch.zeros(1, 1, 5, 16, 16)
        mask[:, :, 1:] = 255  # keep the first frame, generate the rest (image to video)
        inputs.update(video=video, mask_video=mask)
    else:
        inputs.update(control_video=video)
    error, message = failure
    with torch.no_grad(), pytest.raises(error, match=message):
        pipe(generator=torch.Generator().manual_seed(0), **inputs)

"""AutoencoderKLHunyuanVideo15 through TorchaxVAE against the same model in plain PyTorch. Its pipeline's output:
tests/diffusers/test_pipeline_outputs.py (diffusers' own fast test, in CI)."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, check_tiled, random_vae, TOLERANCE
from round_trip import video_round_trip

from torchax_vae import TorchaxVAE
from torchax_vae.models.hunyuanvideo15 import HunyuanVideo15VAE

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module", params=["hunyuan15-tiny", "hunyuan15match-tiny"])
def pair(request):
    vae = random_vae(request.param)
    return request.param, vae, TorchaxVAE(vae)


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_what_pipelines_read(pair):
    _, vae, ours = pair
    assert type(ours) is HunyuanVideo15VAE
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio == 4
    assert ours.temporal_compression_ratio == vae.temporal_compression_ratio
    assert ours.tile_overlap_factor == vae.tile_overlap_factor and ours.tile_latent_min_height == vae.tile_latent_min_height
    x = video(1, 9, 16, 24)
    assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mean.shape)


@pytest.mark.parametrize("frames", [1, 9])
def test_tiny_fp32(pair, frames):
    name, vae, ours = pair
    check_encode_decode(vae, ours, video(1, frames, 16, 24, seed=frames), f"{name} {frames}f")


def test_a_batch_equals_diffusers_sample_by_sample():
    """diffusers' own class fails for batch 2 unless slicing is on (its attention mask broadcasts over the batch
    as heads: torchax_vae/patches/causal_mask.py); here a batch gives what diffusers gives each sample."""
    vae = random_vae("hunyuan15-tiny")
    ours = TorchaxVAE(vae)
    x = video(2, 5, 16, 16, seed=2)
    with pytest.raises(RuntimeError, match="broadcast"):
        vae.encode(x)
    vae.enable_slicing()
    try:
        check_encode_decode(vae, ours, x, "hunyuan15-tiny batch 2")
    finally:
        vae.disable_slicing()


def test_one_program_per_clip_and_bad_lengths_refused_at_the_boundary():
    """A whole-clip VAE, as in diffusers: one program per (frames, size), compiled once, never again."""
    vae = random_vae("hunyuan15-tiny")
    ours = TorchaxVAE(vae)
    for frames in (1, 2, 3, 2, 1):
        ours.decode(torch.randn(1, 4, frames, 4, 4, generator=torch.Generator().manual_seed(frames)))
    assert sorted(s["input_shapes"][0][2] for s in ours.compile_stats()) == [1, 2, 3]
    with pytest.raises(ValueError, match="encodes 1 \\+ 2k frames"):
        ours.encode(torch.randn(1, 3, 4, 16, 16))
    with pytest.raises(ValueError, match="divisible by 4"):
        ours.encode(torch.randn(1, 3, 5, 18, 16))
    assert len(ours.compile_stats()) == 3  # refused before compiling anything


@pytest.mark.slow  # 10 s on 2 cores each (default-suite time: its slicing and tiling share diffusers arithmetic with HunyuanVideo's)
@pytest.mark.parametrize("overlap", [pytest.param(0.25, marks=[pytest.mark.slow, pytest.mark.heavy]), 0.5])  # 0.25: 39 s, by hand
def test_slicing_and_tiling_equal_diffusers(overlap):
    """diffusers' own tiling arguments for this class: sample and latent tile sizes and an overlap factor."""
    vae = random_vae("hunyuan15-tiny")
    tiles = dict(tile_sample_min_height=16, tile_sample_min_width=16, tile_latent_min_height=4,
                 tile_latent_min_width=4, tile_overlap_factor=overlap)
    check_tiled(vae, TorchaxVAE(vae), video(2, 5, 32, 48, seed=3), tiles, slicing=True)


@pytest.mark.slow  # 12 s on 2 cores
def test_bf16():
    vae = random_vae("hunyuan15match-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 9, 16, 16), "hunyuan15match-tiny 9f")


@by_hand  # the released architecture's whole parity row: minutes on 2 cores, out of CI's time; by hand
def test_official_fp32_and_bf16():
    """The released HunyuanVideo 1.5 VAE's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("hunyuanvideo15")
    ours = TorchaxVAE(vae)
    check_encode_decode(vae, ours, video(1, 5, 32, 32, seed=5), "hunyuanvideo15 5f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 5, 32, 32), "hunyuanvideo15 5f")


def _pipeline(vae):
    from diffusers import FlowMatchEulerDiscreteScheduler, HunyuanVideo15Pipeline, HunyuanVideo15Transformer3DModel
    from diffusers.guiders import ClassifierFreeGuidance

    torch.manual_seed(0)  # as diffusers' HunyuanVideo15Pipeline tests build it; prompt embeddings given instead of
    transformer = HunyuanVideo15Transformer3DModel(  # its text encoders (their tokenizers come from the hub)
        in_channels=9, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=1, num_refiner_layers=1,
        mlp_ratio=2.0, patch_size=1, patch_size_t=1, text_embed_dim=16, text_embed_2_dim=32, image_embed_dim=12,
        rope_axes_dim=(2, 2, 4), target_size=16, task_type="t2v",
    ).eval()
    pipe = HunyuanVideo15Pipeline(
        text_encoder=None, tokenizer=None, transformer=transformer, vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0), text_encoder_2=None, tokenizer_2=None,
        guider=ClassifierFreeGuidance(guidance_scale=1.0))
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.mark.slow  # 10 s: the command's processes (CI: every sixth run)
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """HunyuanVideo15Pipeline(output_type="latent") returns [B, C, F, H, W], scaled by scaling_factor."""
    vae = random_vae("hunyuan15-tiny")  # HunyuanVideo15Pipeline: latents / scaling_factor, then decode
    video_round_trip(tmp_path, capsys, vae, (1, 4, 3, 4, 6), lambda z: z / vae.config.scaling_factor,
                     frames=(5, 16, 24, 3), warmup="5,16,24")


def test_hunyuanvideo15_image_to_video_pipeline_with_the_vae_swapped():
    """The image-to-video pipeline encodes its image through the VAE before decoding the video."""
    from diffusers import (FlowMatchEulerDiscreteScheduler, HunyuanVideo15ImageToVideoPipeline,
                           HunyuanVideo15Transformer3DModel)
    from diffusers.guiders import ClassifierFreeGuidance
    from transformers import SiglipImageProcessor, SiglipVisionConfig, SiglipVisionModel

    vae = random_vae("hunyuan15-tiny")
    torch.manual_seed(0)  # tiny components as the text-to-video test's, a tiny SigLIP image encoder
    transformer = HunyuanVideo15Transformer3DModel(
        in_channels=9, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=1, num_refiner_layers=1,
        mlp_ratio=2.0, patch_size=1, patch_size_t=1, text_embed_dim=16, text_embed_2_dim=32, image_embed_dim=12,
        rope_axes_dim=(2, 2, 4), target_size=16, task_type="i2v",
    ).eval()
    image_encoder = SiglipVisionModel(SiglipVisionConfig(
        hidden_size=12, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=8,
    )).eval()
    pipe = HunyuanVideo15ImageToVideoPipeline(
        text_encoder=None, tokenizer=None, transformer=transformer, vae=vae,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0), text_encoder_2=None, tokenizer_2=None,
        guider=ClassifierFreeGuidance(guidance_scale=1.0), image_encoder=image_encoder,
        feature_extractor=SiglipImageProcessor(size={"height": 32, "width": 32}))
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    import PIL.Image

    pixels = (torch.rand(16, 16, 3, generator=generator) * 255).to(torch.uint8).numpy()
    inputs = dict(image=PIL.Image.fromarray(pixels), prompt_embeds=torch.randn(1, 7, 16, generator=generator),
                  prompt_embeds_mask=torch.ones(1, 7, dtype=torch.long),
                  prompt_embeds_2=torch.randn(1, 5, 32, generator=generator),
                  prompt_embeds_mask_2=torch.ones(1, 5, dtype=torch.long),
                  num_inference_steps=2, num_frames=9, output_type="pt")
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
        pipe.vae = TorchaxVAE(vae)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
    assert actual.shape[:3] == (1, 9, 3)
    assert_close(actual, expected, FP32, "HunyuanVideo15ImageToVideoPipeline frames")

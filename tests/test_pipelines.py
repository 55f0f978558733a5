"""pipe.vae = TorchaxVAE(...) in diffusers' three CogVideoX pipelines, offline, tiny components."""

import copy

import pytest
import torch
from diffusers import (
    CogVideoXDDIMScheduler,
    CogVideoXImageToVideoPipeline,
    CogVideoXPipeline,
    CogVideoXTransformer3DModel,
    CogVideoXVideoToVideoPipeline,
)
from helpers import assert_close, random_vae
from PIL import Image

from torchax_vae import TorchaxVAE

TEXT_DIM, TEXT_LEN = 32, 16


def transformer(image_to_video: bool) -> CogVideoXTransformer3DModel:
    torch.manual_seed(0)
    # As in diffusers' pipeline tests: latent 2x2 -> 16x16 frames, 9 frames.
    common = dict(
        out_channels=4,
        time_embed_dim=2,
        text_embed_dim=TEXT_DIM,
        num_layers=1,
        sample_width=2,
        sample_height=2,
        sample_frames=9,
        patch_size=2,
        temporal_compression_ratio=4,
        max_text_seq_length=TEXT_LEN,
    )
    if image_to_video:
        return CogVideoXTransformer3DModel(
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=8,
            use_rotary_positional_embeddings=True,
            use_learned_positional_embeddings=True,
            **common,
        ).eval()
    return CogVideoXTransformer3DModel(num_attention_heads=4, attention_head_dim=8, in_channels=4, **common).eval()


def run_both(pipeline_class, image_to_video=False, **inputs):
    """Frames from the pipeline on diffusers' VAE, and on TorchaxVAE wrapping the same VAE."""
    vae = random_vae("tiny")
    pipe = pipeline_class(
        tokenizer=None, text_encoder=None, vae=vae, transformer=transformer(image_to_video), scheduler=CogVideoXDDIMScheduler()
    )
    pipe.set_progress_bar_config(disable=True)
    torch.manual_seed(1)
    embeds = dict(
        prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM),
        negative_prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM),
    )
    common = dict(num_inference_steps=2, guidance_scale=6.0, height=16, width=16, output_type="pt", **embeds)

    expected = pipe(generator=torch.Generator().manual_seed(0), **common, **inputs).frames
    pipe.vae = TorchaxVAE(copy.deepcopy(vae))
    assert isinstance(pipe.vae, TorchaxVAE)
    actual = pipe(generator=torch.Generator().manual_seed(0), **common, **inputs).frames
    return actual, expected


def test_text_to_video():
    actual, expected = run_both(CogVideoXPipeline, num_frames=9)
    assert actual.shape == (1, 9, 3, 16, 16)
    assert_close(actual, expected, 1e-4, "CogVideoXPipeline frames")


def test_image_to_video():
    image = Image.new("RGB", (16, 16), color=(200, 30, 90))
    actual, expected = run_both(CogVideoXImageToVideoPipeline, image_to_video=True, image=image, num_frames=9)
    assert actual.shape == (1, 9, 3, 16, 16)
    assert_close(actual, expected, 1e-4, "CogVideoXImageToVideoPipeline frames")


@pytest.mark.parametrize("num_frames", [9, pytest.param(17, marks=[pytest.mark.slow, pytest.mark.heavy])])  # 17: two batches, 38 s
def test_video_to_video(num_frames):
    generator = torch.Generator().manual_seed(3)
    video = [
        Image.fromarray((torch.rand(16, 16, 3, generator=generator) * 255).to(torch.uint8).numpy())
        for _ in range(num_frames)
    ]
    actual, expected = run_both(CogVideoXVideoToVideoPipeline, video=video, strength=0.8)
    assert actual.shape == (1, num_frames, 3, 16, 16)
    assert_close(actual, expected, 1e-4, "CogVideoXVideoToVideoPipeline frames")

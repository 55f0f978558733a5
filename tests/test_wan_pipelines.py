"""pipe.vae = TorchaxVAE(...) in diffusers' three Wan pipelines, offline, tiny components, prompt embeddings given."""

import copy

import pytest
import torch
from diffusers import (
    FlowMatchEulerDiscreteScheduler,
    WanImageToVideoPipeline,
    WanPipeline,
    WanTransformer3DModel,
    WanVideoToVideoPipeline,
)
from helpers import assert_close, random_vae
from PIL import Image

from torchax_vae import TorchaxVAE

TEXT_DIM, TEXT_LEN = 32, 8
SIZE = 32  # 4x4 latents: the Wan pipelines need multiples of 16


def transformer(in_channels: int) -> WanTransformer3DModel:
    torch.manual_seed(0)
    # As in diffusers' Wan pipeline tests; in_channels 36 (noise + mask + image latents) for image to video,
    # with no image embedding (image_dim None: the Wan 2.2 image-to-video layout, no CLIP encoder needed).
    return WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=in_channels,
        out_channels=16, text_dim=TEXT_DIM, freq_dim=256, ffn_dim=32, num_layers=2, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", rope_max_seq_len=32,
    ).eval()


def run_both(pipeline_class, in_channels=16, **inputs):
    """Frames from the pipeline on diffusers' Wan VAE, and on TorchaxVAE wrapping the same VAE."""
    vae = random_vae("wan-tiny")
    components = dict(tokenizer=None, text_encoder=None, vae=vae, transformer=transformer(in_channels),
                      scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0))
    pipe = pipeline_class(**components)
    pipe.set_progress_bar_config(disable=True)
    torch.manual_seed(1)
    embeds = dict(
        prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM),
        negative_prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM),
    )
    common = dict(num_inference_steps=2, guidance_scale=5.0, height=SIZE, width=SIZE, output_type="pt", **embeds)

    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **common, **inputs).frames
        pipe.vae = TorchaxVAE(copy.deepcopy(vae))
        assert isinstance(pipe.vae, TorchaxVAE)
        actual = pipe(generator=torch.Generator().manual_seed(0), **common, **inputs).frames
    return actual, expected


def test_text_to_video():
    actual, expected = run_both(WanPipeline, num_frames=9)
    assert actual.shape == (1, 9, 3, SIZE, SIZE)
    assert_close(actual, expected, 1e-4, "WanPipeline frames")


def test_image_to_video():
    image = Image.new("RGB", (SIZE, SIZE), color=(200, 30, 90))
    actual, expected = run_both(WanImageToVideoPipeline, in_channels=36, image=image, num_frames=9)
    assert actual.shape == (1, 9, 3, SIZE, SIZE)
    assert_close(actual, expected, 1e-4, "WanImageToVideoPipeline frames")


@pytest.mark.parametrize("num_frames", [9])
def test_video_to_video(num_frames):
    generator = torch.Generator().manual_seed(3)
    video = [
        Image.fromarray((torch.rand(SIZE, SIZE, 3, generator=generator) * 255).to(torch.uint8).numpy())
        for _ in range(num_frames)
    ]
    actual, expected = run_both(WanVideoToVideoPipeline, video=video, strength=0.8)
    assert actual.shape == (1, num_frames, 3, SIZE, SIZE)
    assert_close(actual, expected, 1e-4, "WanVideoToVideoPipeline frames")

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
from helpers import assert_close, random_vae, settings
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


def tiny_pipeline(vae) -> WanPipeline:
    pipe = WanPipeline(tokenizer=None, text_encoder=None, vae=vae, transformer=transformer(16),
                       scheduler=FlowMatchEulerDiscreteScheduler(shift=7.0))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def frames(pipe) -> torch.Tensor:
    torch.manual_seed(1)
    embeds = dict(prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM), negative_prompt_embeds=torch.randn(1, TEXT_LEN, TEXT_DIM))
    with torch.no_grad():
        return pipe(num_inference_steps=2, height=SIZE, width=SIZE, num_frames=5, output_type="pt",
                    generator=torch.Generator().manual_seed(0), **embeds).frames


def test_a_pipeline_holding_a_torchax_vae_saves_it_and_loads_it_back(tmp_path):
    import json

    from diffusers import AutoencoderKLWan, DiffusionPipeline

    vae = random_vae("wan-tiny")
    pipe = tiny_pipeline(vae)
    pipe.vae = TorchaxVAE(vae)
    pipe.save_pretrained(tmp_path)
    # Before: "vae": [null, null] and no vae/ folder. Now diffusers' custom-component entry, and a plain diffusers folder.
    assert json.loads((tmp_path / "model_index.json").read_text())["vae"] == ["torchax_vae.models.wan", "WanVAE"]
    plain = AutoencoderKLWan.from_pretrained(tmp_path / "vae")
    assert all(torch.equal(plain.state_dict()[k], v) for k, v in vae.state_dict().items())
    back = DiffusionPipeline.from_pretrained(tmp_path, tokenizer=None, text_encoder=None)
    assert isinstance(back.vae, TorchaxVAE) and settings(back.vae.config) == settings(pipe.vae.config)
    # before: "TypeError: vae must be one of ..., got WanVAE" (diffusers' AutoModel read the pipeline's model_index)
    alone = TorchaxVAE.from_pretrained(tmp_path, subfolder="vae")
    assert type(alone) is type(pipe.vae) and settings(alone.config) == settings(pipe.vae.config)
    back.set_progress_bar_config(disable=True)
    assert_close(frames(back), frames(pipe), 1e-6, "frames of the reloaded pipeline")


def test_pipe_to_dtype_reaches_the_torchax_vae():
    pipe = tiny_pipeline(TorchaxVAE(random_vae("wan-tiny")))
    pipe.to(torch.bfloat16)  # before: the TorchaxVAE stayed float32
    assert pipe.vae.dtype == torch.bfloat16
    assert {str(w.dtype) for group in pipe.vae._engine.weights.values() for w in group.values()} == {"bfloat16"}


def test_model_cpu_offload_runs_with_the_vae_on_jax():
    vae = random_vae("wan-tiny")
    expected = frames(tiny_pipeline(TorchaxVAE(vae)))
    pipe = tiny_pipeline(TorchaxVAE(vae))
    pipe.enable_model_cpu_offload(device="cpu")  # accelerate's hooks; the VAE's only record the device
    assert_close(frames(pipe), expected, 1e-6, "frames with model CPU offload")


# ----- other pipelines that reuse AutoencoderKLWan (issue 20) -----


def swapped(pipe, output: str, **inputs):
    """The pipeline's output with diffusers' Wan VAE, and with TorchaxVAE wrapping the same VAE."""
    pipe.set_progress_bar_config(disable=True)
    with torch.no_grad():
        expected = getattr(pipe(generator=torch.Generator().manual_seed(0), **inputs), output)
        pipe.vae = TorchaxVAE(pipe.vae)
        actual = getattr(pipe(generator=torch.Generator().manual_seed(0), **inputs), output)
    return actual, expected


def embeds(dim: int) -> dict:
    generator = torch.Generator().manual_seed(1)
    return dict(prompt_embeds=torch.randn(1, TEXT_LEN, dim, generator=generator),
                negative_prompt_embeds=torch.randn(1, TEXT_LEN, dim, generator=generator))


def test_skyreels_v2_pipeline():
    from diffusers import SkyReelsV2Pipeline, SkyReelsV2Transformer3DModel, UniPCMultistepScheduler

    torch.manual_seed(0)  # as diffusers' SkyReelsV2Pipeline tests build it
    transformer = SkyReelsV2Transformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=16, out_channels=16,
        text_dim=32, freq_dim=256, ffn_dim=32, num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
        rope_max_seq_len=32,
    ).eval()
    pipe = SkyReelsV2Pipeline(transformer=transformer, vae=random_vae("wan-tiny"), text_encoder=None, tokenizer=None,
                              scheduler=UniPCMultistepScheduler(flow_shift=8.0, use_flow_sigmas=True))
    actual, expected = swapped(pipe, "frames", num_inference_steps=2, guidance_scale=6.0, height=16, width=16,
                               num_frames=9, output_type="pt", **embeds(32))
    assert actual.shape == (1, 9, 3, 16, 16)
    assert_close(actual, expected, 1e-4, "SkyReelsV2Pipeline frames")


def test_cosmos2_text_to_image_pipeline():
    from diffusers import Cosmos2TextToImagePipeline, CosmosTransformer3DModel
    from diffusers.configuration_utils import ConfigMixin
    from diffusers.models.modeling_utils import ModelMixin

    class NoGuardrail(ModelMixin, ConfigMixin):
        """The safety checker's interface without Cosmos Guardrail's models (diffusers' tests use one like it)."""

        def __init__(self):
            super().__init__()
            self.register_buffer("_device", torch.zeros(1), persistent=False)  # where the pipeline finds its device

        def check_text_safety(self, prompt) -> bool:
            return True

        def check_video_safety(self, frames):
            return frames

    torch.manual_seed(0)  # as diffusers' Cosmos2TextToImagePipeline tests, without the padding mask (torchvision)
    transformer = CosmosTransformer3DModel(
        in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=16, num_layers=2, mlp_ratio=2,
        text_embed_dim=32, adaln_lora_dim=4, max_size=(4, 32, 32), patch_size=(1, 2, 2), rope_scale=(2.0, 1.0, 1.0),
        concat_padding_mask=False, extra_pos_embed_type="learnable",
    ).eval()
    pipe = Cosmos2TextToImagePipeline(
        transformer=transformer, vae=random_vae("wan-tiny"), text_encoder=None, tokenizer=None,
        scheduler=FlowMatchEulerDiscreteScheduler(use_karras_sigmas=True), safety_checker=NoGuardrail(),
    )
    actual, expected = swapped(pipe, "images", num_inference_steps=2, guidance_scale=3.0, height=32, width=32,
                               output_type="pt", **embeds(32))
    assert actual.shape == (1, 3, 32, 32)
    assert_close(actual, expected, 1e-4, "Cosmos2TextToImagePipeline images (through its uint8 safety check)")

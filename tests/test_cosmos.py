"""AutoencoderKLCosmos through TorchaxVAE against the same model in plain PyTorch, and in the Cosmos pipelines."""

import pytest
import torch
from diffusers.models.autoencoders.vae import IdentityDistribution
from helpers import TOLERANCE, assert_close, bf16_check, pair_fixture, random_vae
from round_trip import video_round_trip

from torchax_vae import TorchaxVAE
from torchax_vae.models.cosmos import CosmosVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("cosmos-tiny")


def video(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def check(vae, ours, x, what):
    """The identity posterior's mode and sample, and the decode of the latents, within fp32 tolerance."""
    expected = vae.encode(x).latent_dist
    actual = ours.encode(x).latent_dist
    assert type(actual) is type(expected) is IdentityDistribution
    assert_close(actual.mode(), expected.mode(), FP32, f"{what} latents")
    assert torch.equal(actual.sample(generator=torch.Generator().manual_seed(7)), actual.mode())
    assert_close(ours.decode(expected.mode()).sample, vae.decode(expected.mode()).sample, FP32, f"{what} decode")


def test_dispatch_and_what_pipelines_read(pair):
    vae, ours = pair
    assert type(ours) is CosmosVAE
    assert (ours.spatial_compression_ratio, ours.temporal_compression_ratio) == (4, 4)
    x = video(1, 9, 32, 32)
    assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mode().shape) == (1, 4, 3, 8, 8)


@pytest.mark.parametrize("frames", [1, 9])
def test_tiny_fp32(pair, frames):
    vae, ours = pair
    check(vae, ours, video(1, frames, 32, 48, seed=frames), f"cosmos-tiny {frames}f")


@pytest.mark.slow  # 15 s on 2 cores (whole clips, batched and sliced: tests/test_mochi.py)
@pytest.mark.heavy  # 50 s on 2 cores (AMD): Mochi's whole clips, batched and sliced, stay in CI
def test_a_batch_sliced_or_not_and_one_program_per_clip():
    vae = random_vae("cosmos-tiny")
    ours = TorchaxVAE(vae)
    x = video(2, 5, 32, 32, seed=2)
    check(vae, ours, x, "cosmos-tiny batch 2")
    ours.enable_slicing()
    check(vae, ours, x, "cosmos-tiny batch 2, sliced")
    ours = TorchaxVAE(vae)  # whole clips, as in diffusers: one program per (frames, size), compiled once
    for frames in (1, 2, 3, 2, 1):
        ours.decode(torch.randn(1, 4, frames, 4, 4, generator=torch.Generator().manual_seed(frames)))
    assert sorted(s["input_shapes"][0][2] for s in ours.compile_stats()) == [1, 2, 3]


def test_tiling_arguments_change_nothing_as_in_diffusers():
    """diffusers' enable_tiling stores its arguments and its encode and decode never read them: whole clips."""
    vae = random_vae("cosmos-tiny")
    ours = TorchaxVAE(vae)
    tiles = dict(tile_sample_min_height=16, tile_sample_min_width=16, tile_sample_stride_height=8,
                 tile_sample_stride_width=8)
    try:
        for model in (vae, ours):
            model.enable_tiling(**tiles)
        check(vae, ours, video(1, 5, 32, 48, seed=3), "cosmos-tiny, tiling on")
        assert {s["name"] for s in ours.compile_stats()} == {"encoder", "decoder"}
        with pytest.raises(AttributeError, match="whole clips"):
            ours.tiled_decode(torch.zeros(1, 4, 2, 8, 12))
    finally:
        for model in (vae, ours):
            model.disable_tiling()


def test_lengths_and_sizes_refused_at_the_boundary(pair):
    _, ours = pair
    before = len(ours.compile_stats())
    with pytest.raises(ValueError, match="encodes 1 \\+ 4k frames"):
        ours.encode(video(1, 4, 32, 32))
    with pytest.raises(ValueError, match="divisible by 4"):
        ours.encode(video(1, 5, 30, 32))
    assert len(ours.compile_stats()) == before


@pytest.mark.slow  # 31 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_bf16():
    vae = random_vae("cosmos-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), video(1, 9, 32, 32), "cosmos-tiny 9f")


@pytest.mark.slow
def test_official_fp32_and_bf16():
    """The released Cosmos 1.0 tokenizer's architecture (the class defaults), seeded random weights, small sizes."""
    vae = random_vae("cosmos")
    check(vae, TorchaxVAE(vae), video(1, 9, 64, 64, seed=5), "cosmos 9f")


def _safety_checker():
    """Stands in for CosmosSafetyChecker (its guardrail models come from the hub), as diffusers' tests do."""
    from diffusers import ConfigMixin, ModelMixin

    class SafetyChecker(ModelMixin, ConfigMixin):
        def __init__(self):
            super().__init__()
            self.register_buffer("_device_tracker", torch.zeros(1), persistent=False)

        @property
        def device(self):
            return self._device_tracker.device

        @property
        def dtype(self):
            return self._device_tracker.dtype

        def check_text_safety(self, prompt: str) -> bool:
            return True

        def check_video_safety(self, frames):
            return frames

    return SafetyChecker()


def _pipeline(vae, cls_name="CosmosTextToWorldPipeline"):
    import diffusers
    from diffusers import CosmosTransformer3DModel, EDMEulerScheduler

    torch.manual_seed(0)  # as diffusers' Cosmos pipeline tests build it; prompt embeddings given instead of T5
    transformer = CosmosTransformer3DModel(
        in_channels=4 + (1 if cls_name == "CosmosVideoToWorldPipeline" else 0), out_channels=4,
        num_attention_heads=2, attention_head_dim=16, num_layers=2, mlp_ratio=2, text_embed_dim=32,
        adaln_lora_dim=4, max_size=(4, 32, 32), patch_size=(1, 2, 2), rope_scale=(2.0, 1.0, 1.0),
        concat_padding_mask=False, extra_pos_embed_type="learnable",  # True needs torchvision
    ).eval()
    scheduler = EDMEulerScheduler(sigma_min=0.002, sigma_max=80, sigma_data=0.5, sigma_schedule="karras",
                                  num_train_timesteps=1000, prediction_type="epsilon", rho=7.0,
                                  final_sigmas_type="sigma_min")
    pipe = getattr(diffusers, cls_name)(text_encoder=None, tokenizer=None, transformer=transformer, vae=vae,
                                        scheduler=scheduler, safety_checker=_safety_checker())
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.mark.parametrize("cls_name", ["CosmosTextToWorldPipeline",
                                      pytest.param("CosmosVideoToWorldPipeline", marks=pytest.mark.slow)])
def test_cosmos_pipelines_with_the_vae_swapped(cls_name):
    """Both pipelines decode through the VAE (the video-to-world one encodes its conditioning frames first).
    They hand back frames quantized to uint8 for the safety checker: equal up to one level where a value sits
    on a rounding boundary."""
    vae = random_vae("cosmos-tiny")
    pipe = _pipeline(vae, cls_name)
    generator = torch.Generator().manual_seed(1)
    inputs = dict(prompt_embeds=torch.randn(1, 16, 32, generator=generator), guidance_scale=1.0,
                  num_inference_steps=2, height=32, width=32, num_frames=9, max_sequence_length=16, output_type="pt")
    if cls_name == "CosmosVideoToWorldPipeline":
        inputs.update(video=torch.rand(1, 5, 3, 32, 32, generator=generator), input_frames_guidance=False)
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
        pipe.vae = TorchaxVAE(vae)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).frames
    assert actual.shape == (1, 9, 3, 32, 32)
    assert_close(actual, expected, 1 / 255 + 1e-6, f"{cls_name} frames")


@pytest.mark.slow  # 28 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.heavy  # out of CI's time: Allegro's, Mochi's, MAGVIT's and HunyuanVideo 1.5's round trips stay
def test_command_round_trip_in_the_pipelines_layout(tmp_path, capsys):
    """CosmosTextToWorldPipeline(output_type="latent") returns [B, C, F, H, W], normalized per channel and latent
    frame by latents_mean and latents_std over the scheduler's sigma_data."""
    vae = random_vae("cosmos-tiny")
    mean = torch.tensor(vae.config.latents_mean).view(1, 4, -1, 1, 1)[:, :, :2]
    std = torch.tensor(vae.config.latents_std).view(1, 4, -1, 1, 1)[:, :, :2]
    # CosmosTextToWorldPipeline: latents * std / sigma_data + mean, then decode
    video_round_trip(tmp_path, capsys, vae, (1, 4, 2, 4, 6), lambda z: z * std / 0.5 + mean, frames=(5, 16, 24, 3),
                     warmup="5,16,24")

"""AutoencoderKLTemporalDecoder (Stable Video Diffusion) through TorchaxVAE against the same model in plain PyTorch:
a 2-D encoder, and a decoder over [B x num_frames, C, h, w] that mixes each video's frames."""

import copy
import inspect

import numpy as np
import pytest
import torch
from diffusers import (
    AutoencoderKLTemporalDecoder,
    EulerDiscreteScheduler,
    StableVideoDiffusionPipeline,
    UNetSpatioTemporalConditionModel,
)
from helpers import TOLERANCE, assert_close, pair_fixture, randn
from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection

from torchax_vae import TorchaxVAE
from torchax_vae.models.temporal_decoder import TemporalDecoderVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("svd-tiny")


@pytest.mark.slow  # 32 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_encode_and_decode_per_num_frames(pair):
    """One decoder program per num_frames (it mixes frames); the same latents decode differently per grouping, as in
    diffusers. The pipeline finds num_frames in forward's signature."""
    vae, ours = pair
    assert type(ours) is TemporalDecoderVAE and isinstance(ours, AutoencoderKLTemporalDecoder)
    assert "num_frames" in inspect.signature(ours.forward).parameters
    x = randn(2, 3, 32, 48, seed=1)
    expected = vae.encode(x).latent_dist
    assert_close(ours.encode(x).latent_dist.mean, expected.mean, FP32, "encode")
    z = randn(6, 4, 8, 12, seed=2)
    for frames in (6, 3, 1):
        assert_close(ours.decode(z, num_frames=frames).sample, vae.decode(z, num_frames=frames).sample, FP32,
                     f"decode, num_frames={frames}")
    assert_close(ours(x, num_frames=2).sample, vae(x, num_frames=2).sample, FP32, "forward")
    names = sorted(s["name"] for s in ours.compile_stats())
    assert names == ["decoder/1f", "decoder/2f", "decoder/3f", "decoder/6f", "encoder"], names


def test_what_diffusers_refuses_is_refused(pair):
    vae, ours = pair
    before = len(ours.compile_stats())
    with pytest.raises(ValueError, match="num_frames must be a positive int dividing the latents' batch of 6"):
        ours.decode(randn(6, 4, 8, 8), num_frames=4)
    with pytest.raises(TypeError):
        ours.decode(randn(6, 4, 8, 8))  # num_frames is required, as in diffusers
    for model in (vae, ours):
        with pytest.raises(NotImplementedError):
            model.enable_tiling()
        with pytest.raises(NotImplementedError):
            model.enable_slicing()
    assert len(ours.compile_stats()) == before


def test_posterior_and_state_dict(pair, tmp_path):
    """encode's posterior (mean, logvar, sample(generator)) as diffusers'; saved weights load in plain diffusers."""
    vae, ours = pair
    expected, got = vae.encode(randn(1, 3, 16, 16, seed=3)).latent_dist, ours.encode(randn(1, 3, 16, 16, seed=3)).latent_dist
    assert_close(got.logvar, expected.logvar, FP32, "logvar")
    sample = got.sample(generator=torch.Generator().manual_seed(5))
    assert_close(sample, expected.sample(generator=torch.Generator().manual_seed(5)), FP32, "sample(generator)")
    ours.save_pretrained(tmp_path)
    z = randn(2, 4, 4, 4, seed=4)
    reloaded = AutoencoderKLTemporalDecoder.from_pretrained(tmp_path)
    assert_close(reloaded.decode(z, num_frames=2).sample, vae.decode(z, num_frames=2).sample, 0.0, "reloaded")


def _svd_components():
    """diffusers' tests/pipelines/stable_video_diffusion get_dummy_components (58eb52c): all local."""
    torch.manual_seed(0)
    unet = UNetSpatioTemporalConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=8, out_channels=4,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"), cross_attention_dim=32,
        num_attention_heads=8, projection_class_embeddings_input_dim=96, addition_time_embed_dim=32)
    scheduler = EulerDiscreteScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", interpolation_type="linear",
        num_train_timesteps=1000, prediction_type="v_prediction", sigma_max=700.0, sigma_min=0.002, steps_offset=1,
        timestep_spacing="leading", timestep_type="continuous", trained_betas=None, use_karras_sigmas=True)
    torch.manual_seed(0)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                                       down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"], latent_channels=4)
    torch.manual_seed(0)
    image_encoder = CLIPVisionModelWithProjection(CLIPVisionConfig(
        hidden_size=32, projection_dim=32, num_hidden_layers=5, num_attention_heads=4, image_size=32,
        intermediate_size=37, patch_size=1))
    return {"unet": unet.eval(), "image_encoder": image_encoder.eval(), "scheduler": scheduler, "vae": vae,
            "feature_extractor": CLIPImageProcessor(crop_size=32, size=32)}


@pytest.mark.parametrize("chunk", [None, 2])
def test_stable_video_diffusion_with_the_vae_swapped(chunk):
    """StableVideoDiffusionPipeline encodes its image, then decodes frames in chunks of decode_chunk_size with
    num_frames (read off forward's signature): the video within 1e-4 of plain diffusers'."""
    components = _svd_components()
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    frames = []
    for vae in (components["vae"], TorchaxVAE(copy.deepcopy(components["vae"]))):
        pipe = StableVideoDiffusionPipeline(**dict(components, vae=vae))
        pipe.set_progress_bar_config(disable=True)
        frames.append(pipe(image=image, generator=torch.Generator().manual_seed(0), num_inference_steps=2,
                           output_type="np", min_guidance_scale=1.0, max_guidance_scale=2.5, num_frames=4, height=32,
                           width=32, decode_chunk_size=chunk).frames)
    delta = np.abs(frames[0] - frames[1]).max()
    assert frames[0].shape == frames[1].shape and delta <= 1e-4, f"StableVideoDiffusionPipeline: max |Δ| {delta:.3g}"


def test_command_writes_one_video_of_the_frames(pair, tmp_path, capsys):
    """`torchax-vae decode` of SVD latents [F, C, h, w] (as the pipeline flattens them): one video of F frames, .npy
    exact to one level and .mp4; `z / scaling_factor` first, as the pipeline."""
    from torchax_vae.cli import main as cli_main

    vae, _ = pair
    vae.save_pretrained(tmp_path / "svd")
    z = randn(3, 4, 8, 8, seed=6)
    np.save(tmp_path / "z.npy", z.numpy())
    model = ["--model", str(tmp_path / "svd"), "--no-cache"]
    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "video.npy"), *model]) == 0
    frames = vae.decode(z / vae.config.scaling_factor, num_frames=3).sample.detach()
    expected = ((frames / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    got = np.load(tmp_path / "video.npy")
    assert got.shape == expected.shape == (3, 16, 16, 3)
    assert np.abs(got.astype(int) - expected).max() <= 1
    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "video.mp4"), *model]) == 0
    assert (tmp_path / "video.mp4").stat().st_size > 0 and not (tmp_path / "video_0.mp4").exists()
    capsys.readouterr()


def test_served_as_one_video(pair):
    """The service decodes SVD latents [F, C, h, w] as one video (num_frames = F, never padded or batched with
    others): [1, C, F, H, W] within 1e-4 of in-process, and MP4."""
    from diffusers.utils.remote_utils import remote_decode
    from serving import serving

    from torchax_vae.serve import create_app

    vae, ours = pair
    z = randn(3, 4, 8, 8, seed=7)
    expected = vae.decode(z, num_frames=3).sample
    with serving(create_app({"svd": ours})) as url:
        video = remote_decode(endpoint=f"{url}/decode/svd", tensor=z, output_type="pt", return_type="pt",
                              do_scaling=False)
        assert tuple(video.shape) == (1, 3, 3, 16, 16)
        assert (video[0].permute(1, 0, 2, 3) - expected).abs().max().item() <= 1e-4
        mp4 = remote_decode(endpoint=f"{url}/decode/svd", tensor=z, output_type="mp4", return_type="mp4",
                            do_scaling=False)
        assert isinstance(mp4, bytes) and len(mp4) > 0


def test_bf16(pair):
    """bf16 encode and decode within 2x PyTorch bf16's own error against fp32 (its convolutions' sums in fp32, as
    helpers.bf16_errors runs every family)."""
    from helpers import BF16_ERROR_RATIO, Bf16ConvsWithFp32Sums

    vae, _ = pair
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    x, z = randn(1, 3, 32, 32, seed=8), randn(3, 4, 8, 8, seed=9)
    mean, frames = vae.encode(x).latent_dist.mean, vae.decode(z, num_frames=3).sample
    theirs = copy.deepcopy(vae).to(torch.bfloat16)
    with Bf16ConvsWithFp32Sums():
        their_errors = ((theirs.encode(x.bfloat16()).latent_dist.mean.float() - mean).abs().max().item(),
                        (theirs.decode(z.bfloat16(), num_frames=3).sample.float() - frames).abs().max().item())
    our_errors = ((ours.encode(x.bfloat16()).latent_dist.mean.float() - mean).abs().max().item(),
                  (ours.decode(z.bfloat16(), num_frames=3).sample.float() - frames).abs().max().item())
    for what, ours_, theirs_ in zip(("encode", "decode"), our_errors, their_errors):
        assert ours_ <= BF16_ERROR_RATIO * theirs_, f"svd-tiny bf16 {what}: ours {ours_:.3g}, PyTorch's {theirs_:.3g}"

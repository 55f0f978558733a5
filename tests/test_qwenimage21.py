"""AutoencoderKLQwenImage21 (Qwen-Image 2.1, diffusers >= 0.42) through TorchaxVAE against the same model in PyTorch."""

import pytest
import torch
from helpers import assert_close, bf16_check, by_hand, check_encode_decode, check_tiled, needs, pair_fixture, random_vae, TOLERANCE

from torchax_vae import TorchaxVAE

pytestmark = needs("qwenimage21-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("qwenimage21-tiny")


def image(batch, height, width, seed=0):
    """4-channel images [B, 4, 1, H, W], as the class encodes (in_channels=4)."""
    return torch.randn(batch, 4, 1, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_what_pipelines_read(pair):
    from torchax_vae.models.qwenimage21 import QwenImage21VAE

    vae, ours = pair
    assert type(ours) is QwenImage21VAE
    assert ours.z_dim == vae.z_dim and ours.temperal_downsample == vae.temperal_downsample
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio == 4
    assert ours.video_channels == 4 and ours.latent_channels == 4
    assert ours.latent_shape((1, 4, 1, 32, 48)) == tuple(vae.encode(image(1, 32, 48)).latent_dist.mean.shape)


@pytest.mark.parametrize("batch", [1, 2])
def test_tiny_fp32(pair, batch):
    vae, ours = pair
    check_encode_decode(vae, ours, image(batch, 32, 48, seed=batch), f"qwenimage21-tiny batch {batch}")


def test_one_program_each_way_and_more_frames_refused_at_the_boundary():
    vae = random_vae("qwenimage21-tiny")
    ours = TorchaxVAE(vae)
    for seed in range(3):
        ours.decode(ours.encode(image(1, 32, 32, seed)).latent_dist.mean)
    assert sorted(s["name"] for s in ours.compile_stats()) == ["decoder/alone", "encoder/alone"]
    with pytest.raises(ValueError, match="encodes images: one frame"):
        ours.encode(torch.randn(1, 4, 5, 32, 32))
    with pytest.raises(ValueError, match="decodes images: one latent frame"):
        ours.decode(torch.randn(1, 4, 2, 8, 8))
    with pytest.raises(ValueError, match="one latent frame"):
        ours.precompile("decode", (1, 4, 3, 8, 8))
    with pytest.raises(ValueError, match="divisible by 4"):
        ours.encode(torch.randn(1, 4, 1, 30, 32))
    assert len(ours.compile_stats()) == 2  # refused before compiling anything


@pytest.mark.slow  # 32 s on 2 cores: CI's slow set (the default suite under 20 minutes)
def test_slicing_and_tiling_equal_diffusers(pair):
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=24,
                tile_sample_stride_width=24)
    check_tiled(*pair, image(2, 48, 40, seed=3), tiles, slicing=True)


def test_bf16():
    vae = random_vae("qwenimage21-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), image(1, 32, 32), "qwenimage21-tiny")


def test_state_dict_save_pretrained_and_normalization(pair, tmp_path):
    from diffusers import AutoencoderKLQwenImage21

    vae, ours = pair
    assert list(ours.state_dict()) == list(vae.state_dict())
    ours.save_pretrained(tmp_path)
    again = AutoencoderKLQwenImage21.from_pretrained(tmp_path)
    assert all(torch.equal(v, vae.state_dict()[k]) for k, v in again.state_dict().items())
    z = torch.randn(1, 4, 1, 8, 8)
    shape = (1, 4, 1, 1, 1)
    mean, std = torch.tensor(vae.config.latents_mean).view(shape), torch.tensor(vae.config.latents_std).view(shape)
    assert torch.allclose(ours.unscale_latents(z), z * std + mean)  # QwenImage21Pipeline before decoding


def test_packed_pipeline_latents_unpack_as_the_pipeline_does(pair):
    from diffusers import QwenImage21Pipeline

    _, ours = pair
    packed = torch.randn(1, 8 * 12, 4, generator=torch.Generator().manual_seed(0))  # 32x48: 8x12 latents, a token each
    assert torch.equal(ours.unpack_latents(packed, 32, 48), QwenImage21Pipeline._unpack_latents(packed, 32, 48, 4))
    with pytest.raises(ValueError, match="do not fit a 32x32 image"):
        ours.unpack_latents(packed, 32, 32)


@by_hand  # 21 s: qwenimage21-tiny has the same blocks
def test_official_fp32_and_bf16():
    """The released Qwen-Image 2.1 VAE's architecture (the class defaults: 16x, patch-free), random weights."""
    vae = random_vae("qwenimage21")
    ours = TorchaxVAE(vae)
    check_encode_decode(vae, ours, image(1, 32, 48), "qwenimage21 1f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), image(1, 32, 32), "qwenimage21 1f")


class _Processor:
    """What QwenImage21Pipeline's constructor reads off its Qwen3VLProcessor; the prompts come as embeddings."""

    class tokenizer:  # noqa: N801 (the processor's attribute)
        @staticmethod
        def encode(text):
            return [0]

    @staticmethod
    def apply_chat_template(messages, tokenize=True, return_dict=False):
        return [[0] * 5]


def test_qwenimage21_pipeline_with_the_vae_swapped():
    from diffusers import FlowMatchEulerDiscreteScheduler, QwenImage21Pipeline, QwenImage21Transformer2DModel

    torch.manual_seed(0)
    transformer = QwenImage21Transformer2DModel(
        patch_size=1, in_channels=4, out_channels=4, num_layers=2, attention_head_dim=16, num_attention_heads=2,
        context_in_dim=16, axes_dims_rope=(8, 4, 4),
    ).eval()
    vae = random_vae("qwenimage21-tiny")
    pipe = QwenImage21Pipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=None,
                               processor=_Processor(), transformer=transformer)
    pipe.vae_scale_factor = vae.spatial_compression_ratio  # the tiny VAE compresses 4x (the released one 16x)
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    inputs = dict(prompt_embeds=torch.randn(1, 7, 16, generator=generator), num_inference_steps=2, height=32, width=32,
                  output_type="pt")
    with torch.no_grad():
        expected = pipe(generator=torch.Generator().manual_seed(0), **inputs).images
        pipe.vae = TorchaxVAE(vae)
        actual = pipe(generator=torch.Generator().manual_seed(0), **inputs).images
    assert actual.shape == (1, 4, 32, 32)
    assert_close(actual, expected, FP32, "QwenImage21Pipeline images")


@pytest.mark.slow  # 12 s: the command's processes (CI: every sixth run)
def test_command_decodes_packed_latents_to_rgba_and_encodes_an_image(tmp_path, capsys):
    """Stage 3 for Qwen-Image 2.1: packed latents [B, tokens, C] with --size, 4-channel (RGBA) frames in .npy."""
    import numpy as np

    from torchax_vae.media import files
    from torchax_vae.cli import main

    vae = random_vae("qwenimage21-tiny")
    vae.save_pretrained(tmp_path / "model" / "vae")
    packed = torch.randn(1, 8 * 8, 4, generator=torch.Generator().manual_seed(0))  # a 32x32 image
    torch.save(packed, tmp_path / "latents.pt")
    args = ["decode", str(tmp_path / "latents.pt"), "--model", str(tmp_path / "model"), "--no-cache", "--size", "32x32"]
    assert main([*args, "-o", str(tmp_path / "image.mp4")]) == 2
    assert "4-channel images (RGBA)" in capsys.readouterr().err and not (tmp_path / "image.mp4").exists()
    assert main([*args, "-o", str(tmp_path / "image.npy")]) == 0, capsys.readouterr().err
    actual = np.load(tmp_path / "image.npy")
    assert actual.shape == (1, 32, 32, 4) and actual.dtype == np.uint8
    from diffusers import QwenImage21Pipeline

    z = QwenImage21Pipeline._unpack_latents(packed, 32, 32, vae.spatial_compression_ratio)
    shape = (1, 4, 1, 1, 1)
    z = z * torch.tensor(vae.config.latents_std).view(shape) + torch.tensor(vae.config.latents_mean).view(shape)
    with torch.no_grad():
        expected = vae.decode(z).sample[0, :, 0]
    expected = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    assert np.abs(actual[0].astype(int) - expected.astype(int)).max() <= 1

    files.write_mp4(tmp_path / "in.mp4", actual[..., :3])  # an RGB file reads as opaque RGBA
    out = tmp_path / "encoded.npy"
    assert main(["encode", str(tmp_path / "in.mp4"), "-o", str(out), "--model", str(tmp_path / "model"),
                 "--no-cache", "--json"]) == 0, capsys.readouterr().err
    assert np.load(out).shape == (1, 4, 1, 8, 8)
    assert main(["warmup", "--model", str(tmp_path / "model"), "--shape", "1,32,32", "--kind", "both", "--no-cache",
                 "--json"]) == 0, capsys.readouterr().err
    assert main(["warmup", "--model", str(tmp_path / "model"), "--shape", "5,32,32", "--no-cache"]) == 2
    assert "one latent frame" in capsys.readouterr().err

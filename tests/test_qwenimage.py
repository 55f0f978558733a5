"""AutoencoderKLQwenImage through TorchaxVAE against the same model in plain PyTorch. Its pipeline's output:
tests/diffusers/test_pipeline_outputs.py (diffusers' own fast test, in CI)."""

import pytest
import torch
from helpers import bf16_check, by_hand, check_encode_decode, check_tiled, pair_fixture, random_vae, TOLERANCE

from torchax_vae import TorchaxVAE
from torchax_vae.models.qwenimage import QwenImageVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("qwenimage-tiny")


def image(batch, frames, height, width, seed=0):
    return torch.randn(batch, 3, frames, height, width, generator=torch.Generator().manual_seed(seed))


def test_dispatch_and_what_pipelines_read(pair):
    vae, ours = pair
    assert type(ours) is QwenImageVAE
    assert ours.z_dim == vae.z_dim and ours.temperal_downsample == vae.temperal_downsample
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio == 4  # tiny: two downsamplings
    assert ours.latent_shape((1, 3, 5, 32, 48)) == tuple(vae.encode(image(1, 5, 32, 48)).latent_dist.mean.shape)


@pytest.mark.parametrize("frames", [1, 5])
def test_tiny_fp32(pair, frames):
    vae, ours = pair
    check_encode_decode(vae, ours, image(1, frames, 32, 48, seed=frames), f"qwenimage-tiny {frames}f")


def test_an_image_compiles_one_program_each_way_and_a_video_two():
    vae = random_vae("qwenimage-tiny")
    ours = TorchaxVAE(vae)
    for seed in range(3):  # images: the pipeline's case
        z = ours.encode(image(1, 1, 32, 32, seed)).latent_dist.mean
        ours.decode(z)
    assert sorted(s["name"] for s in ours.compile_stats()) == ["decoder/alone", "encoder/alone"]
    # the only call hands on no cache: its outputs are the image's alone
    assert all(s["output_bytes"] < 4 * 3 * 32 * 32 * 2 for s in ours.compile_stats())
    for frames in (2, 3, 4):
        ours.decode(torch.randn(1, 4, frames, 6, 6))
    assert sorted(s["name"] for s in ours.compile_stats() if s["input_shapes"][0][3] == 6) == [
        "decoder", "decoder+feat_cache"]


@pytest.mark.slow  # 13 s on 2 cores (the feat_cache scheme's tiling: tests/test_wan.py)
def test_slicing_and_tiling_equal_diffusers(pair):
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=24,
                tile_sample_stride_width=24)
    check_tiled(*pair, image(2, 1, 48, 40, seed=3), tiles, slicing=True)


def test_bf16():
    vae = random_vae("qwenimage-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), image(1, 1, 32, 32), "qwenimage-tiny")


def test_latent_normalization_is_the_pipelines(pair):
    vae, ours = pair
    z = torch.randn(1, 4, 1, 8, 8)
    shape = (1, 4, 1, 1, 1)
    mean = torch.tensor(vae.config.latents_mean).view(shape)
    inv_std = 1.0 / torch.tensor(vae.config.latents_std).view(shape)
    assert torch.equal(ours.unscale_latents(z), z / inv_std + mean)  # QwenImagePipeline before decoding


@by_hand  # 26 s: qwenimage-tiny has the same blocks
def test_official_fp32_and_bf16():
    """The released Qwen-Image VAE's architecture (the class defaults), seeded random weights, an image and 5 frames."""
    vae = random_vae("qwenimage")
    ours = TorchaxVAE(vae)
    for frames in (1, 5):
        check_encode_decode(vae, ours, image(1, frames, 24, 40, seed=frames), f"qwenimage {frames}f")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), image(1, 1, 24, 40), "qwenimage 1f")


@pytest.mark.slow  # 12 s: the command's processes (CI: every sixth run)
def test_command_decodes_packed_pipeline_latents_and_encodes_an_image(tmp_path, capsys):
    """Stage 3 for Qwen-Image: output_type="latent" gives packed latents [B, tokens, C x 4]; --size unpacks them."""
    import numpy as np
    from diffusers import QwenImagePipeline

    from torchax_vae.media import files
    from torchax_vae.cli import main

    vae = random_vae("qwenimage-tiny")
    vae.save_pretrained(tmp_path / "model" / "vae")
    packed = torch.randn(1, 4 * 4, 16, generator=torch.Generator().manual_seed(0))  # 32x32 image: 4x4 patches
    torch.save(packed, tmp_path / "latents.pt")
    args = ["decode", str(tmp_path / "latents.pt"), "--model", str(tmp_path / "model"), "--no-cache"]
    assert main([*args, "-o", str(tmp_path / "image.npy")]) == 2
    assert "pass --size HEIGHTxWIDTH" in capsys.readouterr().err
    assert main([*args, "-o", str(tmp_path / "image.npy"), "--size", "32x48"]) == 2
    assert "do not fit a 32x48 image" in capsys.readouterr().err
    assert main([*args, "-o", str(tmp_path / "image.npy"), "--size", "32x32"]) == 0, capsys.readouterr().err
    z = QwenImagePipeline._unpack_latents(packed, 32, 32, vae.spatial_compression_ratio)
    shape = (1, 4, 1, 1, 1)
    z = z * torch.tensor(vae.config.latents_std).view(shape) + torch.tensor(vae.config.latents_mean).view(shape)
    with torch.no_grad():
        expected = vae.decode(z).sample[:, :, 0]  # as QwenImagePipeline, then its image processor's rounding
    expected = ((expected[0] / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    actual = np.load(tmp_path / "image.npy")
    assert actual.shape == (1, 32, 32, 3)
    assert np.abs(actual[0].astype(int) - expected.astype(int)).max() <= 1  # a rounding step of a 1e-6 difference

    files.write_mp4(tmp_path / "in.mp4", actual)  # one frame
    out = tmp_path / "encoded.npy"
    assert main(["encode", str(tmp_path / "in.mp4"), "-o", str(out), "--model", str(tmp_path / "model"),
                 "--no-cache", "--json"]) == 0
    assert np.load(out).shape == (1, 4, 1, 8, 8)  # [B, C, F, H, W], as Qwen-Image's pipelines hold 5-D latents

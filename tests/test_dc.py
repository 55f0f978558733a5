"""AutoencoderDC (Sana's DC-AE) through TorchaxVAE against the same model in plain PyTorch: images [B, C, H, W],
latents with no posterior (`encode(x).latent`)."""

import copy

import pytest
import torch
from diffusers import AutoencoderDC
from diffusers.models.autoencoders.vae import DecoderOutput, EncoderOutput
from helpers import TOLERANCE, assert_close, bf16_check, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.models import input_shape
from torchax_vae.models.dc import DCVAE

FP32 = TOLERANCE[torch.float32]


def check(vae, ours, x, what):
    """encode(x).latent, decode of it and forward, within fp32 tolerance."""
    expected = vae.encode(x).latent
    got = ours.encode(x)
    assert isinstance(got, EncoderOutput) and got.latent.shape == expected.shape
    assert_close(got.latent, expected, FP32, f"{what} encode")
    assert_close(ours.decode(expected).sample, vae.decode(expected).sample, FP32, f"{what} decode")
    out = ours(x)
    assert isinstance(out, DecoderOutput)
    assert_close(out.sample, vae(x).sample, FP32, f"{what} forward")


pair = pair_fixture("dc-small")


def test_dispatch_and_what_pipelines_read(pair):
    vae, ours = pair
    assert type(ours) is DCVAE and isinstance(ours, AutoencoderDC)
    assert (ours.rank, ours.spatial_compression_ratio, ours.latent_channels) == (4, 4, 8)
    assert ours.spatial_compression_ratio == vae.spatial_compression_ratio
    assert input_shape(ours, "decode", 1, 32, 64) == (1, 8, 8, 16)
    assert (ours.tile_sample_min_height, ours.tile_sample_stride_width, ours.tile_latent_min_height) == (512, 448, 128)


@pytest.mark.parametrize("config, shape", [("dc-tiny", (2, 3, 32, 48)), ("dc-small", (1, 3, 32, 64))])
def test_fp32(config, shape):
    vae = random_vae(config)
    check(vae, TorchaxVAE(vae), randn(*shape, seed=1), config)


def test_batch_sliced_or_not_one_program_per_shape(pair):
    vae, _ = pair
    ours = TorchaxVAE(vae)
    x = randn(3, 3, 16, 16, seed=2)
    check(vae, ours, x, "dc-small batch 3")
    ours.enable_slicing()
    check(vae, ours, x, "dc-small batch 3, sliced")
    names = sorted((s["name"], s["input_shapes"][-1]) for s in ours.compile_stats())
    assert names == [("decoder", (1, 8, 4, 4)), ("decoder", (3, 8, 4, 4)),
                     ("encoder", (1, 3, 16, 16)), ("encoder", (3, 3, 16, 16))], names


@pytest.mark.slow  # the default suite keeps its padded edge tiles against fp64 (below)
def test_tiling_as_diffusers_with_its_arguments():
    """enable_tiling(min height, min width, stride height, stride width): tiles every stride, edge tiles at their own
    shape (an encoder's padded to the compression, as diffusers pads it), blended over tile - stride; the public
    tiled_encode / tiled_decode too."""
    vae = random_vae("dc-tiny")
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling(16, 16, 12, 12)
    x = randn(1, 3, 40, 30, seed=3)
    check(vae, ours, x, "dc-tiny tiled 40x30")
    assert {s["name"] for s in ours.compile_stats()} == {"encoder/tile", "decoder/tile"}
    assert_close(ours.tiled_encode(x).latent, vae.tiled_encode(x).latent, FP32, "tiled_encode")
    z = randn(1, 4, 10, 9, seed=4)
    assert_close(ours.tiled_decode(z).sample, vae.tiled_decode(z).sample, FP32, "tiled_decode")


def test_tiled_encode_with_padded_edge_tiles_against_fp64():
    """Short edge tiles (4 x 8 pixels: one latent row) make the linear attention ill-conditioned: here diffusers' own
    fp32 is 5.8e-5 from fp64 and ours 4.5e-5, 1.0e-4 apart. Both are held to fp64: ours no further than 1e-4."""
    vae = random_vae("dc-small")
    ours = TorchaxVAE(vae)
    vae.enable_tiling(16, 24, 12, 16)
    ours.enable_tiling(16, 24, 12, 16)
    x = randn(1, 3, 40, 56, seed=1)
    reference = copy.deepcopy(vae).double().encode(x.double()).latent
    got = ours.encode(x).latent
    assert_close(got.double(), reference, FP32, "dc-small tiled encode against fp64")
    assert_close(vae.encode(x).latent.double(), reference, FP32, "diffusers' fp32 against fp64")


def test_sizes_and_channels_refused_before_compiling(pair):
    _, ours = pair
    before = len(ours.compile_stats())
    with pytest.raises(ValueError, match="multiples of 4 .*got 30x64"):
        ours.encode(randn(1, 3, 30, 64))
    with pytest.raises(ValueError, match="has 4 channels"):
        ours.decode(randn(1, 4, 8, 8))
    assert len(ours.compile_stats()) == before


def test_latent_scaling_as_the_pipelines(pair):
    _, ours = pair
    z = randn(1, 8, 2, 2, seed=5)
    assert torch.allclose(ours.scale_latents(z), z * 0.41407)
    assert torch.allclose(ours.unscale_latents(ours.scale_latents(z)), z, atol=1e-6)


def test_bf16():
    vae = random_vae("dc-small")
    x = randn(1, 3, 32, 32, seed=6)
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), x, "dc-small", latents=lambda m, x: m.encode(x).latent)


def test_state_dict_and_save_pretrained_load_in_plain_diffusers(tmp_path, pair):
    vae, ours = pair
    assert list(ours.state_dict()) == list(vae.state_dict())
    ours.save_pretrained(tmp_path)
    reloaded = AutoencoderDC.from_pretrained(tmp_path)
    z = randn(1, 8, 2, 3, seed=7)
    assert_close(reloaded.decode(z).sample, vae.decode(z).sample, 0.0, "plain diffusers, reloaded")
    assert type(TorchaxVAE.from_pretrained(tmp_path, subfolder=None)) is DCVAE



"""AutoencoderKLHunyuanImage (HunyuanImage 2.1) through TorchaxVAE against the same model in plain PyTorch."""

import copy
import dataclasses
from types import SimpleNamespace

import pytest
import torch
from diffusers import AutoencoderKL, AutoencoderKLHunyuanImage
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, pair_fixture, randn

from torchax_vae import TorchaxVAE
from torchax_vae.placement import backends
from torchax_vae.models.hunyuanimage import HunyuanImageVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("hunyuanimage-tiny")


def test_dispatch_and_fp32(pair):
    vae, ours = pair
    assert type(ours) is HunyuanImageVAE and isinstance(ours, AutoencoderKLHunyuanImage)
    assert (ours.rank, ours.spatial_compression_ratio, ours.latent_channels) == (4, 8, 4)
    check_encode_decode(vae, ours, randn(2, 3, 32, 48, seed=1), "hunyuanimage-tiny")


def _reference_tiled_encode(vae, x):
    """diffusers' tiled encode arithmetic for this class, run in diffusers' own loop: its `tiled_encode` unpacks a 5-D
    shape from 4-D images and raises, so AutoencoderKL's `_tiled_encode` (the same tile size, overlap, blend and
    row limit; no quant_conv) runs on this model's encoder and blends."""
    host = SimpleNamespace(encoder=vae.encoder, config=SimpleNamespace(use_quant_conv=False), blend_v=vae.blend_v,
                           blend_h=vae.blend_h, tile_sample_min_size=vae.tile_sample_min_size,
                           tile_latent_min_size=vae.tile_latent_min_size, tile_overlap_factor=vae.tile_overlap_factor)
    return AutoencoderKL._tiled_encode(host, x)


def test_batch_sliced_or_not(pair):
    vae, _ = pair
    vae, ours = copy.deepcopy(vae), TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_slicing()
    check_encode_decode(vae, ours, randn(2, 3, 16, 24, seed=7), "hunyuanimage-tiny batch 2, sliced")
    assert {s["input_shapes"][-1][0] for s in ours.compile_stats()} == {1}


@pytest.mark.slow  # 21 s on 2 cores: 4 + 4 tile shapes compile
def test_tiling_with_its_enable_tiling_arguments(pair):
    vae, _ = pair
    vae = copy.deepcopy(vae)
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling(32, 0.25)  # 32 x 32 image tiles every 24, 4 x 4 latent tiles every 3
    assert (ours.tile_sample_min_size, ours.tile_latent_min_size, ours.tile_overlap_factor) == (32, 4, 0.25)
    z = randn(1, 4, 10, 7, seed=2)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "tiled decode")
    assert_close(ours.tiled_decode(z).sample, vae.tiled_decode(z).sample, FP32, "tiled_decode")
    x = randn(1, 3, 64, 88, seed=3)
    with pytest.raises(ValueError):  # diffusers' own, on any image (the module docstring of models/hunyuanimage.py)
        vae.tiled_encode(x)
    expected = _reference_tiled_encode(vae, x)
    assert_close(ours.tiled_encode(x), expected, FP32, "tiled_encode")
    assert_close(ours.encode(x).latent_dist.mean, expected.chunk(2, dim=1)[0], FP32, "encode, tiled")
    assert {s["name"] for s in ours.compile_stats()} == {"encoder/tile", "decoder/tile"}


def test_sizes_refused_before_compiling(pair):
    _, ours = pair
    before = len(ours.compile_stats())
    with pytest.raises(ValueError, match="multiples of 8 .*got 36x48"):
        ours.encode(randn(1, 3, 36, 48))
    assert len(ours.compile_stats()) == before


def test_headless_attention_in_query_blocks(pair, monkeypatch):
    """The mid block's single-head attention has no heads axis ([B, tokens, C]); past the score limit it runs in
    query blocks as AutoencoderKL's does, within 1e-4 of PyTorch."""
    vae, _ = pair
    row = dataclasses.replace(backends.BACKENDS["cpu"], attention_score_limit=16 * 1024)
    monkeypatch.setitem(backends.BACKENDS, "cpu", row)
    ours = TorchaxVAE(vae)
    z = randn(1, 4, 16, 16, seed=4)  # 256 tokens: 256 KiB of fp32 scores, blocks of 16 queries
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "decode, attention in blocks")
    assert "stablehlo.while" in "".join(ours.lower("decode", (1, 4, 16, 16)).values())


@pytest.mark.slow  # 12 s (CI: every sixth run)
def test_bf16_scaling_and_state_dict(pair, tmp_path):
    vae, ours = pair
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 32, seed=5), "hunyuanimage-tiny")
    z = randn(1, 4, 2, 2, seed=6)
    assert torch.allclose(ours.unscale_latents(z), z / 0.476986)
    assert torch.allclose(ours.scale_latents(ours.unscale_latents(z)), z, atol=1e-6)
    ours.save_pretrained(tmp_path)
    assert_close(AutoencoderKLHunyuanImage.from_pretrained(tmp_path).decode(z).sample, vae.decode(z).sample, 0.0,
                 "plain diffusers, reloaded")



"""AutoencoderKL (SD, SDXL, SD3, Flux) through TorchaxVAE against the same model in plain PyTorch: images [B, C, H, W]."""

import pytest
import torch
from diffusers import AutoencoderKL
from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKLOutput
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.models import input_shape
from torchax_vae.models.kl import KLVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("sd-tiny")


def test_dispatch_and_what_pipelines_read(pair):
    vae, ours = pair
    assert type(ours) is KLVAE and isinstance(ours, AutoencoderKL)
    assert (ours.rank, ours.spatial_compression_ratio, ours.latent_channels) == (4, 2, 4)
    x = randn(1, 3, 48, 64)
    assert ours.latent_shape(x.shape) == tuple(vae.encode(x).latent_dist.mode().shape) == (1, 4, 24, 32)
    assert input_shape(ours, "decode", 1, 48, 64) == (1, 4, 24, 32)
    with pytest.raises(ValueError, match="images: one frame, got 9"):
        input_shape(ours, "encode", 9, 48, 64)


@pytest.mark.parametrize("config, size", [("sd-tiny", (48, 64)), ("kl-tiny", (33, 30)), ("flux-tiny", (32, 48))])
def test_tiny_fp32(config, size):
    """Posterior mean, logvar, sample(generator) and decode; odd sizes as diffusers' Downsample2D rounds them;
    Flux's 16 channels without quant convolutions."""
    vae = random_vae(config)
    check_encode_decode(vae, TorchaxVAE(vae), randn(1, vae.config.in_channels, *size, seed=1), f"{config} {size}")


def test_batch_sliced_or_not_one_program_per_shape():
    vae = random_vae("kl-tiny")
    ours = TorchaxVAE(vae)
    x = randn(3, 3, 32, 32, seed=2)
    check_encode_decode(vae, ours, x, "kl-tiny batch 3")
    ours.enable_slicing()
    check_encode_decode(vae, ours, x, "kl-tiny batch 3, sliced")
    names = sorted((s["name"], s["input_shapes"][-1]) for s in ours.compile_stats())
    assert names == [("decoder", (1, 4, 16, 16)), ("decoder", (3, 4, 16, 16)),
                     ("encoder", (1, 3, 32, 32)), ("encoder", (3, 3, 32, 32))], names


@pytest.mark.slow  # 30 s on 2 cores: CI's slow set (the default suite under 20 minutes)
@pytest.mark.parametrize("size", [pytest.param((64, 64), marks=pytest.mark.slow), (80, 56)])
def test_tiling_as_diffusers(size):
    """enable_tiling with the class's own attributes: tiles of tile_sample_min_size every 3/4 of it, edge tiles
    at their own shape, blended over a quarter; the public tiled_encode / tiled_decode too."""
    vae = random_vae("kl-tiny")  # sample_size 32: 32 x 32 image tiles, 16 x 16 latent tiles
    ours = TorchaxVAE(vae)
    vae.enable_tiling()
    ours.enable_tiling()
    assert ours.use_tiling and (ours.tile_sample_min_size, ours.tile_latent_min_size) == (32, 16)
    x = randn(2, 3, *size, seed=3)
    check_encode_decode(vae, ours, x, f"kl-tiny tiled {size}")
    assert {s["name"] for s in ours.compile_stats()} == {"encoder/tile", "decoder/tile"}
    got, expected = ours.tiled_encode(x), vae.tiled_encode(x)
    assert isinstance(got, AutoencoderKLOutput)
    assert_close(got.latent_dist.mean, expected.latent_dist.mean, FP32, "tiled_encode")
    assert_close(ours._tiled_encode(x), vae._tiled_encode(x), FP32, "_tiled_encode")
    z = randn(1, 4, 20, 24, seed=4)
    assert_close(ours.tiled_decode(z).sample, vae.tiled_decode(z).sample, FP32, "tiled_decode")


@pytest.mark.slow  # 40 s on 2 cores: each edge tile shape compiles
@pytest.mark.heavy  # 49 s on 2 cores (AMD): out of CI's time; test_tiling_as_diffusers carries the tiles
def test_overlap_factor_and_minimum_size_as_set_on_the_instance():
    vae = random_vae("kl-tiny")
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling()
        model.tile_sample_min_size, model.tile_latent_min_size, model.tile_overlap_factor = 24, 12, 0.5
    check_encode_decode(vae, ours, randn(1, 3, 56, 40, seed=5), "kl-tiny tiles 24, overlap 0.5")


def test_decode_takes_diffusers_arguments_and_checks_its_input(pair):
    vae, ours = pair
    z = randn(1, 4, 8, 8, seed=6)
    out = ours.decode(z, return_dict=False, generator=torch.Generator().manual_seed(0))[0]
    assert_close(out, vae.decode(z, return_dict=False, generator=None)[0], FP32, "decode(generator=)")
    before = len(ours.compile_stats())
    with pytest.raises(ValueError, match=r"must be 4-D \[batch, channels, height, width\], got 5-D"):
        ours.decode(randn(1, 4, 1, 8, 8))
    with pytest.raises(ValueError, match="has 16 channels"):
        ours.decode(randn(1, 16, 8, 8))
    assert len(ours.compile_stats()) == before


def test_fused_qkv_projections_as_pipelines_call_them(pair):
    """`pipe.fuse_qkv_projections()` calls the VAE's fuse_qkv_projections and set_attn_processor(FusedAttnProcessor2_0):
    accepted, the same images; a processor that would compute otherwise is refused."""
    from diffusers.models.attention_processor import AttnProcessor2_0, FusedAttnProcessor2_0

    vae, ours = pair
    z = randn(1, 4, 8, 8, seed=6)
    ours.fuse_qkv_projections()
    ours.set_attn_processor(FusedAttnProcessor2_0())
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "decode after fuse_qkv_projections")
    ours.unfuse_qkv_projections()
    ours.set_attn_processor({"mid_block.attentions.0.processor": AttnProcessor2_0()})

    class Scaled(AttnProcessor2_0):
        pass

    with pytest.raises(NotImplementedError, match=r"\['Scaled'\] would compute otherwise"):
        ours.set_attn_processor(Scaled())


@pytest.mark.parametrize("config", ["sd-tiny", "flux2-tiny", "svd-tiny", "dc-tiny", "tiny-tiny", "hunyuanimage-tiny"])
def test_attention_methods_exist_where_diffusers_has_them(config):
    """`hasattr(vae, "fuse_qkv_projections")` answers as for the wrapped class (pipelines ask before calling)."""
    vae = random_vae(config)
    ours = TorchaxVAE(vae)
    for name in ("fuse_qkv_projections", "unfuse_qkv_projections", "set_attn_processor"):
        assert hasattr(ours, name) == hasattr(vae, name), (config, name)
        if not hasattr(vae, name):
            with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
                getattr(ours, name)


@pytest.mark.parametrize("config", ["sd-tiny", "flux-tiny"])
def test_latent_scaling_as_the_pipelines(config):
    """SD: z * scaling_factor; SD3 and Flux: (z - shift_factor) * scaling_factor; undone before decode."""
    ours = TorchaxVAE(random_vae(config))
    z = randn(1, ours.latent_channels, 4, 4, seed=7)
    config = ours.config
    expected = (z - (config.shift_factor or 0.0)) * config.scaling_factor
    assert torch.allclose(ours.scale_latents(z), expected)
    assert torch.allclose(ours.unscale_latents(expected), z, atol=1e-6)


def test_sdxl_latents_mean_and_std():
    """Where the config has latents_mean/std: StableDiffusionXLPipeline's `z * std / scaling_factor + mean`."""
    vae = AutoencoderKL(**{**random_vae("kl-tiny").config, "latents_mean": [0.1, 0.2, 0.3, 0.4],
                           "latents_std": [1.0, 2.0, 3.0, 4.0], "scaling_factor": 0.5})
    ours = TorchaxVAE(vae.eval())
    z = randn(1, 4, 2, 2, seed=8)
    mean, std = torch.tensor([0.1, 0.2, 0.3, 0.4]).view(1, 4, 1, 1), torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 4, 1, 1)
    assert torch.allclose(ours.unscale_latents(z), z * std / 0.5 + mean)
    assert torch.allclose(ours.scale_latents(ours.unscale_latents(z)), z, atol=1e-6)


def test_bf16():
    vae = random_vae("sd-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 48, seed=9), "sd-tiny")


def test_state_dict_and_save_pretrained_load_in_plain_diffusers(tmp_path):
    vae, other = random_vae("flux-tiny"), random_vae("flux-tiny", seed=1)
    ours = TorchaxVAE(vae)
    assert list(ours.state_dict()) == list(vae.state_dict())
    ours.load_state_dict(other.state_dict())
    z = randn(1, 16, 4, 6, seed=10)
    assert_close(ours.decode(z).sample, other.decode(z).sample, FP32, "decode with loaded weights")
    ours.save_pretrained(tmp_path)
    reloaded = AutoencoderKL.from_pretrained(tmp_path)
    assert_close(reloaded.decode(z).sample, other.decode(z).sample, 0.0, "plain diffusers, reloaded")
    again = TorchaxVAE.from_pretrained(tmp_path, subfolder=None)
    assert type(again) is KLVAE and again.config.shift_factor == 0.1159


@pytest.mark.slow
@pytest.mark.parametrize("config", ["sd1.5", "flux"])
def test_released_architectures(config):
    """The released SD 1.5 and Flux.1 VAE architectures (seeded random weights) at 64 x 64, fp32."""
    vae = random_vae(config)
    check_encode_decode(vae, TorchaxVAE(vae), randn(1, 3, 64, 64, seed=11), config)


def test_flux_packed_latents_unpack_as_the_pipeline():
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline

    ours = TorchaxVAE(random_vae("flux-tiny"))  # 2x compression here: a 32 x 48 image has 16 x 24 latents
    packed = randn(2, 8 * 12, 64, seed=12)
    expected = FluxPipeline._unpack_latents(packed, 32, 48, ours.spatial_compression_ratio)
    assert torch.equal(ours.unpack_latents(packed, 32, 48), expected)
    with pytest.raises(ValueError, match=r"expected \[B, 96, 64\]"):
        ours.unpack_latents(randn(1, 95, 64), 32, 48)


def test_submodules_pipelines_read_are_views_of_the_weights():
    """`vae.post_quant_conv` (SDXL reads its parameters' dtype), nested tensors, None where diffusers has None; the
    views follow load_state_dict and casts, and never write back."""
    vae = random_vae("sd-tiny")
    ours = TorchaxVAE(vae)
    assert torch.equal(ours.post_quant_conv.weight, vae.post_quant_conv.weight)
    assert [n for n, _ in ours.decoder.conv_in.named_parameters()] == ["weight", "bias"]
    assert torch.equal(ours.decoder.conv_in.bias, vae.decoder.conv_in.bias)
    assert TorchaxVAE(random_vae("flux-tiny")).post_quant_conv is None  # use_post_quant_conv=False, as in diffusers
    ours.to(torch.bfloat16)
    assert next(iter(ours.post_quant_conv.parameters())).dtype == torch.bfloat16
    ours.post_quant_conv.weight.data.zero_()  # a copy: the wrapper's weights stay
    assert ours.post_quant_conv.weight.abs().sum() > 0
    with pytest.raises(AttributeError, match="no tensor or submodule 'nope'"):
        ours.post_quant_conv.nope
    with pytest.raises(AttributeError):
        ours.no_such_child

"""AutoencoderKLFlux2 (Flux.2) through TorchaxVAE against the same model in plain PyTorch: AutoencoderKL's calls, and
Flux.2's latent normalization by the `bn` statistics, as Flux2Pipeline applies it."""

import copy

import numpy as np
import PIL.Image
import pytest
import torch
from diffusers import (
    AutoencoderKL,
    AutoencoderKLFlux2,
    FlowMatchEulerDiscreteScheduler,
    Flux2Pipeline,
    Flux2Transformer2DModel,
)
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, randn, random_vae

from torchax_vae import TorchaxVAE
from torchax_vae.models.flux2 import Flux2VAE

FP32 = TOLERANCE[torch.float32]


def with_statistics(vae, seed=0):
    """Running statistics other than BatchNorm's initial 0 and 1, so that the normalization shows."""
    g = torch.Generator().manual_seed(seed)
    vae.bn.running_mean.copy_(torch.randn(vae.bn.running_mean.shape, generator=g))
    vae.bn.running_var.copy_(torch.rand(vae.bn.running_var.shape, generator=g) + 0.5)
    return vae


@pytest.fixture(scope="module")
def pair():
    vae = with_statistics(random_vae("flux2-tiny"))
    return vae, TorchaxVAE(vae)


def test_dispatch_training_mode_and_the_bn_view(pair):
    """A fresh diffusers model is in training mode (its pipeline tests build it so); `bn` never runs, so that is no
    reason to refuse it. The pipelines read `vae.bn.running_mean` / `running_var`: views of the wrapped values."""
    vae, ours = pair
    assert type(ours) is Flux2VAE and isinstance(ours, AutoencoderKLFlux2) and not isinstance(ours, AutoencoderKL)
    assert (ours.rank, ours.spatial_compression_ratio, ours.latent_channels) == (4, 2, 4)
    assert TorchaxVAE(copy.deepcopy(vae).train()).training
    assert torch.equal(ours.bn.running_mean, vae.bn.running_mean)
    assert torch.equal(ours.bn.running_var, vae.bn.running_var)
    assert ours.bn.running_var.shape == (16,)


def test_fp32_encode_decode(pair):
    vae, ours = pair
    check_encode_decode(vae, ours, randn(2, 3, 48, 64, seed=1), "flux2-tiny")


def test_batch_sliced(pair):
    vae, _ = pair
    vae, ours = copy.deepcopy(vae), TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_slicing()
    check_encode_decode(vae, ours, randn(2, 3, 16, 24, seed=6), "flux2-tiny batch 2, sliced")
    assert {s["input_shapes"][-1][0] for s in ours.compile_stats()} == {1}


@pytest.mark.slow  # 12 s on 2 cores (AutoencoderKL's tiling, which these calls are: tests/test_kl.py)
def test_tiling_as_diffusers():
    vae = random_vae("flux2-tiny")  # sample_size 32: 32 x 32 image tiles, 16 x 16 latent tiles
    ours = TorchaxVAE(vae)
    vae.enable_tiling()
    ours.enable_tiling()
    check_encode_decode(vae, ours, randn(1, 3, 56, 40, seed=2), "flux2-tiny tiled")
    assert {s["name"] for s in ours.compile_stats()} == {"encoder/tile", "decoder/tile"}


def test_bf16():
    vae = random_vae("flux2-tiny")
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 48, seed=3), "flux2-tiny")


def test_latent_normalization_and_packed_latents_as_the_pipeline(pair):
    """scale_latents: Flux2Pipeline's patchify and bn normalization (kept in the decoder's layout); unscale_latents:
    its de-normalization before decode; unpack_latents: its `_unpack_latents_with_ids` with its own ids."""
    _, ours = pair
    z = randn(2, 4, 6, 8, seed=4)
    bn = ours.bn
    mean = bn.running_mean.view(1, -1, 1, 1)
    std = torch.sqrt(bn.running_var.view(1, -1, 1, 1) + ours.config.batch_norm_eps)
    normalized = (Flux2Pipeline._patchify_latents(z) - mean) / std  # _encode_vae_image
    assert torch.allclose(Flux2Pipeline._patchify_latents(ours.scale_latents(z)), normalized, atol=1e-6)
    denormalized = Flux2Pipeline._unpatchify_latents(normalized * std + mean)  # before decode
    assert torch.allclose(ours.unscale_latents(ours.scale_latents(z)), denormalized, atol=1e-5)
    assert torch.allclose(denormalized, z, atol=1e-5)

    packed = Flux2Pipeline._pack_latents(normalized)  # what output_type="latent" returns: [B, 12, 16]
    ids = Flux2Pipeline._prepare_latent_ids(normalized)
    expected = Flux2Pipeline._unpatchify_latents(Flux2Pipeline._unpack_latents_with_ids(packed, ids))
    assert torch.equal(ours.unpack_latents(packed, 12, 16), expected)
    with pytest.raises(ValueError, match=r"expected \[B, 12, 16\]"):
        ours.unpack_latents(packed[:, :11], 12, 16)


def test_state_dict_and_save_pretrained_load_in_plain_diffusers(tmp_path, pair):
    vae, ours = pair
    assert list(ours.state_dict()) == list(vae.state_dict())
    assert torch.equal(ours.state_dict()["bn.running_var"], vae.bn.running_var)
    ours.save_pretrained(tmp_path)
    reloaded = AutoencoderKLFlux2.from_pretrained(tmp_path)
    assert torch.equal(reloaded.bn.running_mean, vae.bn.running_mean)
    z = randn(1, 4, 4, 6, seed=5)
    assert_close(reloaded.decode(z).sample, vae.decode(z).sample, 0.0, "plain diffusers, reloaded")


def _flux2_components():
    """diffusers' tests/pipelines/flux2 get_dummy_components (58eb52c), less the text encoder and its processor,
    with bn statistics that are not the identity."""
    torch.manual_seed(0)
    transformer = Flux2Transformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
                                          attention_head_dim=16, num_attention_heads=2, joint_attention_dim=16,
                                          timestep_guidance_channels=256, axes_dims_rope=[4, 4, 4, 4])
    torch.manual_seed(0)
    vae = AutoencoderKLFlux2(sample_size=32, in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
                             up_block_types=("UpDecoderBlock2D",), block_out_channels=(4,), layers_per_block=1,
                             latent_channels=1, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False)
    return {"scheduler": FlowMatchEulerDiscreteScheduler(), "text_encoder": None, "tokenizer": None,
            "transformer": transformer, "vae": with_statistics(vae)}


@pytest.mark.parametrize("reference", [False, True])
def test_flux2_pipeline_with_the_vae_swapped(reference):
    """Flux2Pipeline: its images on diffusers' VAE and on a TorchaxVAE of it, within 1e-4; with a reference image the
    pipeline also encodes (argmax of the posterior) and normalizes by `vae.bn`."""
    components = _flux2_components()
    embeds = torch.randn(1, 8, 16, generator=torch.Generator().manual_seed(1))
    pixels = np.random.default_rng(2).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    extra = {"image": [PIL.Image.fromarray(pixels)]} if reference else {}  # the pipeline takes 64 x 64 and up
    outputs = []
    for vae in (components["vae"], TorchaxVAE(copy.deepcopy(components["vae"]))):
        pipe = Flux2Pipeline(**dict(components, vae=vae))
        pipe.set_progress_bar_config(disable=True)
        outputs.append(pipe(prompt_embeds=embeds, generator=torch.Generator().manual_seed(0), num_inference_steps=2,
                            height=16, width=16, output_type="np", **extra).images)
    delta = np.abs(outputs[0] - outputs[1]).max()
    assert outputs[0].shape == outputs[1].shape and delta <= 1e-4, f"Flux2Pipeline: max |Δ| {delta:.3g}"

"""AutoencoderTiny (TAESD, TAESDXL, TAESD3, TAEF1) through TorchaxVAE against the same model in plain PyTorch."""

import copy

import numpy as np
import pytest
import torch
from diffusers import AutoencoderTiny, StableDiffusionImg2ImgPipeline, StableDiffusionPipeline
from diffusers.models.autoencoders.autoencoder_tiny import AutoencoderTinyOutput
from helpers import MODELS, TOLERANCE, assert_close, pair_fixture, randn
from test_kl_pipelines import _embeds, _sd_components

from torchax_vae import TorchaxVAE
from torchax_vae.models import input_shape
from torchax_vae.models.tiny import TinyVAE

FP32 = TOLERANCE[torch.float32]
TINY = MODELS["tiny-tiny"][1]  # its arguments


def images(*shape, seed):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1


pair = pair_fixture("tiny-tiny")


def test_dispatch_encode_decode_forward(pair):
    vae, ours = pair
    assert type(ours) is TinyVAE and isinstance(ours, AutoencoderTiny)
    assert (ours.rank, ours.spatial_compression_ratio, ours.latent_channels) == (4, 8, 4)
    x = images(2, 3, 32, 44, seed=1)  # 44: the stride-2 convolutions round up (6 latent columns)
    expected = vae.encode(x).latents
    got = ours.encode(x)
    assert isinstance(got, AutoencoderTinyOutput) and got.latents.shape == expected.shape == (2, 4, 4, 6)
    assert ours.latent_shape(x.shape) == (2, 4, 4, 6) and input_shape(ours, "decode", 1, 32, 44) == (1, 4, 4, 6)
    assert_close(got.latents, expected, FP32, "encode")
    out = ours.decode(expected, None, False)[0]  # diffusers' positional order: (x, generator, return_dict)
    assert_close(out, vae.decode(expected).sample, FP32, "decode")
    assert_close(ours(x).sample, vae(x).sample, FP32, "forward (latents through uint8)")


def test_batch_sliced(pair):
    vae, _ = pair
    vae, ours = copy.deepcopy(vae), TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_slicing()
    x = images(2, 3, 16, 24, seed=9)
    assert_close(ours.encode(x).latents, vae.encode(x).latents, FP32, "sliced encode")
    z = randn(2, 4, 2, 3, seed=10)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "sliced decode")
    assert {s["input_shapes"][-1][0] for s in ours.compile_stats()} == {1}


def test_diffusers_scale_latents_and_the_pipelines_normalization(pair):
    """scale_latents / unscale_latents keep AutoencoderTiny's meaning ([0, 1] storage); the command and the service
    use the pipelines' `z * scaling_factor` (and TAEF1's shift)."""
    vae, ours = pair
    z = randn(1, 4, 3, 3, seed=2)
    assert torch.equal(ours.scale_latents(z), vae.scale_latents(z))
    assert torch.equal(ours.unscale_latents(z), vae.unscale_latents(z))
    taef1 = TorchaxVAE(AutoencoderTiny(**TINY | {"latent_channels": 16, "scaling_factor": 0.3611,
                                                                           "shift_factor": 0.1159}).eval())
    z16 = randn(1, 16, 2, 2, seed=3)
    assert torch.allclose(taef1.normalize_latents(z16), (z16 - 0.1159) * 0.3611)
    assert torch.allclose(taef1.denormalize_latents(taef1.normalize_latents(z16)), z16, atol=1e-6)


def test_tiling_as_diffusers_masked_writes(pair):
    """diffusers' own tiling (not AutoencoderKL's): tiles every tile x 7/8, each written through a ramp mask; every
    input tiled once tiling is on; edge tiles at their own shape."""
    vae, _ = pair
    vae = copy.deepcopy(vae)
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling()
        model.tile_sample_min_size, model.tile_latent_min_size = 32, 4
    x = images(1, 3, 72, 96, seed=4)
    assert_close(ours.encode(x).latents, vae.encode(x).latents, FP32, "tiled encode")
    z = randn(1, 4, 9, 12, seed=5)
    assert_close(ours.decode(z).sample, vae.decode(z).sample, FP32, "tiled decode")
    assert_close(ours._tiled_decode(z), vae._tiled_decode(z), FP32, "_tiled_decode")
    assert {s["name"] for s in ours.compile_stats()} == {"encoder/tile", "decoder/tile"}


def test_sixteen_latent_channels_tile_where_diffusers_fails():
    """diffusers' tiled encode writes into 4 output channels whatever the model has (TAEF1, TAESD3: 16), and fails;
    here the tiles hold the model's channels, each equal to diffusers' untiled encode of that tile."""
    vae = AutoencoderTiny(**TINY | {"latent_channels": 16}).eval()
    ours = TorchaxVAE(vae)
    ours.enable_tiling()
    ours.tile_sample_min_size, ours.tile_latent_min_size = 32, 4
    x = images(1, 3, 32, 32, seed=6)  # one tile: the untiled encode
    vae.enable_tiling()
    vae.tile_sample_min_size = 32
    with pytest.raises(RuntimeError):
        vae.encode(x)
    vae.disable_tiling()
    assert_close(ours.encode(x).latents, vae.encode(x).latents, FP32, "16 channels, one tile")


def test_bf16_and_state_dict(pair, tmp_path):
    vae, ours = pair
    x = images(1, 3, 32, 32, seed=7)
    fp32 = vae.decode(vae.encode(x).latents).sample
    theirs = copy.deepcopy(vae).to(torch.bfloat16)
    their_error = (theirs.decode(theirs.encode(x.bfloat16()).latents).sample.float() - fp32).abs().max().item()
    bf16 = TorchaxVAE(vae, dtype=torch.bfloat16)
    our_error = (bf16.decode(bf16.encode(x.bfloat16()).latents).sample.float() - fp32).abs().max().item()
    assert our_error <= 2 * their_error + 1e-3, f"bf16 round trip: ours {our_error:.3g}, PyTorch bf16's {their_error:.3g}"
    ours.save_pretrained(tmp_path)
    z = randn(1, 4, 2, 2, seed=8)
    assert_close(AutoencoderTiny.from_pretrained(tmp_path).decode(z).sample, vae.decode(z).sample, 0.0, "reloaded")


def _with_taesd(components):
    torch.manual_seed(0)
    return dict(components, vae=AutoencoderTiny(**TINY))


@pytest.mark.parametrize("img2img", [False, True])
def test_stable_diffusion_with_taesd_swapped_in_and_wrapped(img2img):
    """TAESD as SD pipelines take it (pipe.vae = AutoencoderTiny), then wrapped: the same images within 1e-4; img2img
    encodes through `retrieve_latents` (`.latents`)."""
    components = _with_taesd(_sd_components())
    prompt = {"prompt_embeds": _embeds(1, 6, 8, seed=1), "negative_prompt_embeds": _embeds(1, 6, 8, seed=2)}
    pipeline_class = StableDiffusionImg2ImgPipeline if img2img else StableDiffusionPipeline
    extra = {"image": images(1, 3, 64, 64, seed=3) / 2 + 0.5, "strength": 0.75} if img2img else {"height": 64, "width": 64}
    outputs = []
    for vae in (components["vae"], TorchaxVAE(copy.deepcopy(components["vae"]))):
        pipe = pipeline_class(**dict(components, vae=vae))
        pipe.set_progress_bar_config(disable=True)
        outputs.append(pipe(generator=torch.Generator().manual_seed(0), num_inference_steps=2, output_type="np",
                            **prompt, **extra).images)
    delta = np.abs(outputs[0] - outputs[1]).max()
    assert outputs[0].shape == outputs[1].shape and delta <= 1e-4, f"{pipeline_class.__name__}: max |Δ| {delta:.3g}"

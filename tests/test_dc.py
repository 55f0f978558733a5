"""AutoencoderDC (Sana's DC-AE) through TorchaxVAE against the same model in plain PyTorch: images [B, C, H, W],
latents with no posterior (`encode(x).latent`)."""

import copy

import numpy as np
import pytest
import torch
from diffusers import (
    AutoencoderDC,
    FlowMatchEulerDiscreteScheduler,
    SanaPipeline,
    SanaSprintImg2ImgPipeline,
    SanaTransformer2DModel,
    SCMScheduler,
)
from diffusers.models.autoencoders.vae import DecoderOutput, EncoderOutput
from helpers import TOLERANCE, assert_close, bf16_check, randn, random_vae

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


@pytest.fixture(scope="module")
def pair():
    vae = random_vae("dc-small")
    return vae, TorchaxVAE(vae)


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


def _sana_vae():
    """diffusers' tests/pipelines/sana get_dummy_components VAE (58eb52c)."""
    torch.manual_seed(0)
    return AutoencoderDC(**random_vae("dc-tiny").config)


def _run(pipeline_class, components, **inputs):
    """The pipeline's images on diffusers' VAE, then on a TorchaxVAE of it."""
    outputs = []
    for vae in (components["vae"], TorchaxVAE(copy.deepcopy(components["vae"]))):
        pipe = pipeline_class(**dict(components, vae=vae))
        pipe.set_progress_bar_config(disable=True)
        outputs.append(pipe(generator=torch.Generator().manual_seed(0), output_type="np", **inputs).images)
    delta = np.abs(outputs[0] - outputs[1]).max()
    assert outputs[0].shape == outputs[1].shape and delta <= 1e-4, f"{pipeline_class.__name__}: max |Δ| {delta:.3g}"


def _embeds(seed):
    return {"prompt_embeds": torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(seed)),
            "prompt_attention_mask": torch.ones(1, 6, dtype=torch.long)}


def test_sana_pipeline_with_the_vae_swapped():
    """SanaPipeline decodes `latents / scaling_factor` (diffusers' fast-test components, prompt embeddings given)."""
    torch.manual_seed(0)
    transformer = SanaTransformer2DModel(patch_size=1, in_channels=4, out_channels=4, num_layers=1,
                                         num_attention_heads=2, attention_head_dim=4, num_cross_attention_heads=2,
                                         cross_attention_head_dim=4, cross_attention_dim=8, caption_channels=8,
                                         sample_size=32)
    components = {"transformer": transformer.eval(), "vae": _sana_vae(), "text_encoder": None, "tokenizer": None,
                  "scheduler": FlowMatchEulerDiscreteScheduler(shift=7.0)}
    negative = {f"negative_{k}": v for k, v in _embeds(2).items()}
    _run(SanaPipeline, components, height=32, width=32, num_inference_steps=2, use_resolution_binning=False,
         negative_prompt=None, **_embeds(1), **negative)


def test_sana_sprint_img2img_encodes_with_the_vae_swapped():
    """SanaSprintImg2ImgPipeline encodes its image (`vae.encode(image).latent`), then decodes."""
    torch.manual_seed(0)
    transformer = SanaTransformer2DModel(patch_size=1, in_channels=4, out_channels=4, num_layers=1,
                                         num_attention_heads=2, attention_head_dim=4, num_cross_attention_heads=2,
                                         cross_attention_head_dim=4, cross_attention_dim=8, caption_channels=8,
                                         sample_size=32, qk_norm="rms_norm_across_heads", guidance_embeds=True)
    components = {"transformer": transformer.eval(), "vae": _sana_vae(), "text_encoder": None, "tokenizer": None,
                  "scheduler": SCMScheduler()}
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    _run(SanaSprintImg2ImgPipeline, components, image=image, height=32, width=32, num_inference_steps=2,
         use_resolution_binning=False, **_embeds(1))

"""`pipe.vae = TorchaxVAE(pipe.vae)` in diffusers' image pipelines that use AutoencoderKL (SD, SD img2img, SDXL with
its fp16 upcast, SD3, Flux), offline: the components of diffusers' own pipeline tests (get_dummy_components), prompt
embeddings passed in instead of text encoders; the images against the same pipeline on diffusers' VAE."""

import copy

import numpy as np
import pytest
import torch
from diffusers import (
    AutoencoderKL,
    DDIMScheduler,
    FlowMatchEulerDiscreteScheduler,
    FluxPipeline,
    FluxTransformer2DModel,
    SD3Transformer2DModel,
    StableDiffusion3Pipeline,
    StableDiffusionImg2ImgPipeline,
    StableDiffusionPipeline,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
)

from torchax_vae import TorchaxVAE

ATOL = 1e-4


def _embeds(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _images(pipe, **inputs):
    pipe.set_progress_bar_config(disable=True)
    return pipe(generator=torch.Generator().manual_seed(0), num_inference_steps=2, output_type="np", **inputs).images


def run_both(pipeline_class, components, **inputs):
    """The pipeline's images on diffusers' VAE, then on a TorchaxVAE of the same VAE; both returned."""
    plain = _images(pipeline_class(**components), **inputs)
    swapped = dict(components, vae=TorchaxVAE(copy.deepcopy(components["vae"])))
    return plain, _images(pipeline_class(**swapped), **inputs)


def check(plain, ours, what):
    assert plain.shape == ours.shape, f"{what}: {ours.shape} != {plain.shape}"
    delta = np.abs(plain - ours).max()
    assert delta <= ATOL, f"{what}: images differ from plain diffusers' by max |Δ| {delta:.3g}"


def _sd_components(vae_dtype=torch.float32):
    """diffusers' tests/pipelines/stable_diffusion get_dummy_components, less the text encoder and tokenizer."""
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(4, 8), layers_per_block=1, sample_size=32, in_channels=4,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=8,
                                norm_num_groups=2)
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=[4, 8], in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=2,
                        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False)
    return {"unet": unet.eval(), "vae": vae.eval().to(vae_dtype), "scheduler": scheduler, "text_encoder": None,
            "tokenizer": None, "safety_checker": None, "feature_extractor": None, "image_encoder": None,
            "requires_safety_checker": False}


def test_stable_diffusion():
    """StableDiffusionPipeline decodes with `vae.decode(latents / scaling_factor, return_dict=False, generator=...)`."""
    prompt = {"prompt_embeds": _embeds(1, 6, 8, seed=1), "negative_prompt_embeds": _embeds(1, 6, 8, seed=2)}
    check(*run_both(StableDiffusionPipeline, _sd_components(), height=32, width=32, **prompt), "SD txt2img")


def test_stable_diffusion_img2img():
    """The image encoded by the VAE (its posterior sampled with the call's generator), then decoded."""
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    prompt = {"prompt_embeds": _embeds(1, 6, 8, seed=1), "negative_prompt_embeds": _embeds(1, 6, 8, seed=2)}
    check(*run_both(StableDiffusionImg2ImgPipeline, _sd_components(), image=image, strength=0.75, **prompt),
          "SD img2img")


def test_from_pipe_keeps_a_wrapped_vae_when_it_is_passed():
    """diffusers' `from_pipe` carries a model component over only when its type is exactly the new pipeline's type hint
    (`type(component) in component_types[name]`), which a TorchaxVAE's type is not (docs/limits.md): without it the
    vae is missing and diffusers raises; passed (`from_pipe(pipe, vae=pipe.vae)`) it is shared, and the pipeline
    made so gives plain diffusers' images."""
    image = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(3))
    prompt = {"prompt_embeds": _embeds(1, 6, 8, seed=1), "negative_prompt_embeds": _embeds(1, 6, 8, seed=2)}
    components = _sd_components()
    plain = _images(StableDiffusionImg2ImgPipeline.from_pipe(StableDiffusionPipeline(**components)), image=image,
                    strength=0.75, **prompt)
    pipe = StableDiffusionPipeline(**dict(components, vae=TorchaxVAE(copy.deepcopy(components["vae"]))))
    with pytest.raises(ValueError, match="vae"):
        StableDiffusionImg2ImgPipeline.from_pipe(pipe)
    img2img = StableDiffusionImg2ImgPipeline.from_pipe(pipe, vae=pipe.vae)
    assert img2img.vae is pipe.vae
    check(plain, _images(img2img, image=image, strength=0.75, **prompt), "SD img2img from_pipe")


def test_stable_diffusion_xl_fp16_vae_upcasts():
    """SDXL with an fp16 VAE and force_upcast: it casts the VAE to fp32 (`vae.to`), reads
    `next(iter(vae.post_quant_conv.parameters())).dtype` for the latents, decodes, and casts back to fp16."""
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(2, 4), layers_per_block=2, sample_size=32, in_channels=4,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
                                use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
                                transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=80,
                                cross_attention_dim=64, norm_num_groups=1)
    components = _sd_components(torch.float16)
    for key in ("safety_checker", "requires_safety_checker"):
        components.pop(key)
    components.update(unet=unet.eval(), text_encoder_2=None, tokenizer_2=None)
    prompt = {"prompt_embeds": _embeds(1, 6, 64, seed=1), "negative_prompt_embeds": _embeds(1, 6, 64, seed=2),
              "pooled_prompt_embeds": _embeds(1, 32, seed=3), "negative_pooled_prompt_embeds": _embeds(1, 32, seed=4)}
    plain, ours = run_both(StableDiffusionXLPipeline, components, height=32, width=32, **prompt)
    check(plain, ours, "SDXL, fp16 VAE upcast to decode")


def test_stable_diffusion_3():
    """SD3: 16 channels, no quant convolutions; latents `/ scaling_factor + shift_factor` before decoding."""
    torch.manual_seed(0)
    transformer = SD3Transformer2DModel(sample_size=32, patch_size=1, in_channels=4, num_layers=1, attention_head_dim=8,
                                        num_attention_heads=4, caption_projection_dim=32, joint_attention_dim=32,
                                        pooled_projection_dim=64, out_channels=4)
    torch.manual_seed(0)
    vae = AutoencoderKL(sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1,
                        latent_channels=4, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
                        shift_factor=0.0609, scaling_factor=1.5035)
    components = {"transformer": transformer.eval(), "vae": vae.eval(), "scheduler": FlowMatchEulerDiscreteScheduler(),
                  "text_encoder": None, "tokenizer": None, "text_encoder_2": None, "tokenizer_2": None,
                  "text_encoder_3": None, "tokenizer_3": None}
    prompt = {"prompt_embeds": _embeds(1, 6, 32, seed=1), "negative_prompt_embeds": _embeds(1, 6, 32, seed=2),
              "pooled_prompt_embeds": _embeds(1, 64, seed=3), "negative_pooled_prompt_embeds": _embeds(1, 64, seed=4)}
    check(*run_both(StableDiffusion3Pipeline, components, height=32, width=32, **prompt), "SD3")


@pytest.mark.parametrize("output", ["np", "latent"])
def test_flux(output):
    """Flux: packed latents unpacked by the pipeline, `/ scaling_factor + shift_factor`, decoded; and its
    output_type="latent" packed latents, which TorchaxVAE's `unpack_latents` takes as FluxPipeline does."""
    torch.manual_seed(0)
    transformer = FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
                                         attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                         pooled_projection_dim=32, axes_dims_rope=[4, 4, 8])
    torch.manual_seed(0)
    vae = AutoencoderKL(sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1,
                        latent_channels=1, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
                        shift_factor=0.0609, scaling_factor=1.5035)
    components = {"transformer": transformer.eval(), "vae": vae.eval(), "scheduler": FlowMatchEulerDiscreteScheduler(),
                  "text_encoder": None, "tokenizer": None, "text_encoder_2": None, "tokenizer_2": None}
    prompt = {"prompt_embeds": _embeds(1, 6, 32, seed=1), "pooled_prompt_embeds": _embeds(1, 32, seed=3)}
    if output == "np":
        check(*run_both(FluxPipeline, components, height=16, width=16, **prompt), "Flux")
        return
    pipe = FluxPipeline(**components)
    pipe.set_progress_bar_config(disable=True)
    packed = pipe(generator=torch.Generator().manual_seed(0), num_inference_steps=2, output_type="latent", height=16,
                  width=16, **prompt).images
    ours = TorchaxVAE(vae)
    expected = FluxPipeline._unpack_latents(packed, 16, 16, pipe.vae_scale_factor)
    assert torch.equal(ours.unpack_latents(packed, 16, 16), expected)
    z = ours.unscale_latents(expected)
    assert (ours.decode(z).sample - vae.decode(z).sample).abs().max().item() <= ATOL

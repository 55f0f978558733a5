"""OpenAI's consistency decoder: diffusers' ConsistencyDecoderVAE (`vae=` of SD 1.x pipelines).

How diffusers runs it, and how this adapter does:

- `encode` is AutoencoderKL's: the encoder and `quant_conv` on the image batch, a `DiagonalGaussianDistribution`;
  slicing and `tiled_encode` as diffusers' (tiles of `tile_sample_min_size`, every 3/4 of it, blended). Here the
  KL family's (models/kl.py), one program per shape.
- `decode(z, generator, num_inference_steps=2)` is a two-step consistency model: the latents normalized with the
  class's `means` / `stds` (after `scaling_factor`), upsampled nearest to the image size, and a UNet2DModel run
  twice under `ConsistencyDecoderScheduler` (timesteps 1008 and 512): the image starts as noise x
  `init_noise_sigma`, each step predicts `x_0 = c_out x unet([x c_in, z]) + c_skip x`, and the first step re-noises
  it to the second timestep with fresh noise. Both noises come from the call's `generator` (torch's global one
  without), drawn on the host here as diffusers' `randn_tensor` draws them (same shapes, dtype and order), and the
  whole decode is one program of (weights, latents, the two noises): the same images as PyTorch for the same
  generator. The scheduler's constants come from a scheduler of the wrapped one's config, made once per lowering.
- No decode tiling or slicing, as diffusers' decode has neither (it decodes the whole batch at once).
"""

import functools

import jax
import torch
import torch.nn.functional as F
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.consistency", "ConsistencyDecoderVAEModel"] entry
# by looking the base class up in this module.
from diffusers import ConsistencyDecoderVAE, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.consistency_decoder_vae import ConsistencyDecoderVAEOutput
from diffusers.models.autoencoders.vae import DecoderOutput
from diffusers.utils.torch_utils import randn_tensor

from torchax_vae.engine import convert, validation
from torchax_vae.engine.arrays import is_abstract
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.models.windows import WindowLowered
from torchax_vae.facade.family import config_value

__all__ = ["Consistency", "ConsistencyDecoderVAEModel"]

STEPS = 2  # ConsistencyDecoderScheduler.set_timesteps takes 2 and nothing else


class ConsistencyLowered(WindowLowered):
    """AutoencoderKL's encode step, and the whole two-step decode as one program."""

    def __init__(self, vae, *args, **kwargs):
        super().__init__(vae, *args, **kwargs)
        with torch.device("cpu"):  # a scheduler of its own (set_timesteps writes to it), on the CPU where the model
            scheduler = type(vae.decoder_scheduler).from_config(vae.decoder_scheduler.config)  # is on meta (plan)
        scheduler.set_timesteps(STEPS)
        self.timesteps = [int(t) for t in scheduler.timesteps]
        self.init_sigma = float(scheduler.init_noise_sigma)
        self.scales = [(float(scheduler.c_in[t]), float(scheduler.c_out[t]), float(scheduler.c_skip[t]))
                       for t in self.timesteps]
        # step i < last re-noises x_0 to timestep i + 1: (sqrt(alpha_cumprod), sqrt(1 - alpha_cumprod)) there, in
        # float32 (the scheduler casts them to the sample's dtype: `renoise` does too)
        self.renoise = [(scheduler.sqrt_alphas_cumprod[t], scheduler.sqrt_one_minus_alphas_cumprod[t])
                        for t in self.timesteps[1:]]

    def decode_step(self, weights, latents, *noise):
        """ConsistencyDecoderVAE.decode on latents [B, C, h, w], its noises given: the images [B, 3, H, W]."""
        dtype = latents.dtype
        weights, latents, noise = self.env.j2t_iso((weights, latents, noise))
        config = self.model.config
        with self._tracing(dtype, latents.shape, 1):
            z = (latents * config.scaling_factor - weights["means"][""]) / weights["stds"][""]
            z = F.interpolate(z, mode="nearest", scale_factor=2 ** (len(config.block_out_channels) - 1))
            unet = {name: t for name, t in weights["decoder_unet"].items()}
            x = self.init_sigma * noise[0]
            for i, (t, (c_in, c_out, c_skip)) in enumerate(zip(self.timesteps, self.scales)):
                timestep = torch.tensor(t, dtype=torch.long)
                model_input = torch.concat([x * c_in, z], dim=1)
                out = torch.func.functional_call(self.model.decoder_unet, unet, (model_input, timestep)).sample[:, :3]
                x_0 = c_out * out + c_skip * x
                if i == len(self.timesteps) - 1:
                    x = x_0
                else:
                    alpha, sigma = (float(c.to(latents.dtype)) for c in self.renoise[i])
                    x = alpha * x_0 + sigma * noise[i + 1]
        return self.env.t2j_iso(x)


class Consistency(KL):
    """diffusers' `ConsistencyDecoderVAE`, as diffusers runs it (the module docstring)."""

    model_class = ConsistencyDecoderVAE
    decode_draws_noise = True  # from the call's generator

    def lower(self, vae):
        return self.lowering_on(ConsistencyLowered, vae, self.marked, self.spatial_compression_ratio,
                                  rank=4)

    video_channels = config_value("encoder_in_channels")

    def decode(self, source, tiled: bool | None = None, generator=None) -> jax.Array:
        """The images of the source's latents: the noises drawn on the host from `generator` as diffusers draws
        them, then one program of the whole decode (the module docstring)."""
        latents = source.take()
        batch, _, height, width = source.shape
        ratio = self.spatial_compression_ratio
        shape = (batch, 3, height * ratio, width * ratio)
        sharding, dtype = self.engine.placement.activation(shape), self.engine.dtype
        if is_abstract(latents):  # precompile, lower, plan: the shapes alone
            noise = [jax.ShapeDtypeStruct(shape, convert.jax_dtype(dtype), sharding=sharding)] * STEPS
        else:  # diffusers' draws: the initial noise, then each re-noising step's, from the call's generator
            noise = [convert.to_jax(randn_tensor(shape, generator=generator, dtype=dtype), None, sharding)
                     for _ in range(STEPS)]
        return self.engine.run_batch("decoder", self.lowered.decode_step, self.engine.weights, latents, *noise)


class ConsistencyDecoderVAEModel(KLVAE):
    """`TorchaxVAE` for diffusers' `ConsistencyDecoderVAE` (the module docstring)."""

    family = Consistency

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """The posterior of images [B, 3, H, W], as diffusers' (`ConsistencyDecoderVAEOutput`)."""
        posterior = self._posterior(x)
        return ConsistencyDecoderVAEOutput(latent_dist=posterior) if return_dict else (posterior,)

    def tiled_encode(self, x: torch.Tensor, return_dict: bool = True):
        """diffusers' `tiled_encode` of this class: the posterior of `x` encoded in tiles whatever its size."""
        posterior = self.posterior_class(self._tiled_encode(x))
        return ConsistencyDecoderVAEOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, z: torch.Tensor, generator: torch.Generator | None = None, return_dict: bool = True,
               num_inference_steps: int = STEPS):
        """Images [B, 3, H, W] of latents [B, C, h, w], their noise from `generator` (torch's global one without),
        as diffusers' two-step decode (the module docstring)."""
        return self._decoder_output(self._decode_call(z, generator, num_inference_steps=num_inference_steps),
                                    return_dict)

    def _decode_call(self, z: torch.Tensor, generator: torch.Generator | None = None, num_inference_steps: int = STEPS):
        if num_inference_steps != STEPS:
            raise ValueError(f"num_inference_steps must be {STEPS}, got {num_inference_steps}: diffusers' "
                             "ConsistencyDecoderScheduler supports 2 steps only")
        validation.check_video(z, name="decode input", channels=self.latent_channels, role="decoder", rank=4,
                               dtype=self.dtype)
        return self._prepare(functools.partial(self._family.decode_chunks, generator=generator), z)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator: torch.Generator | None = None):
        """Encode, then decode with the same generator, as diffusers' `forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z, generator=generator).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _kind_chunks(self, kind: str, source):
        """decode: the whole batch, never sliced (diffusers' decode has no slicing); its noise as shapes."""
        if kind == "decode":
            return self._family.decode(source)
        return super()._kind_chunks(kind, source)

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_decode", "unpack_latents")

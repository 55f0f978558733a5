"""Stable Video Diffusion's VAE: diffusers' AutoencoderKLTemporalDecoder (StableVideoDiffusionPipeline, I2VGen-XL's
image encoder side).

How diffusers runs it, and how this adapter does:

- `encode`: the 2-D encoder (AutoencoderKL's, with quant_conv) on images
  [B, C, H, W]; one program per shape.
- `decode(z, num_frames)`: latents [B x F, C, h, w], frames of B videos in a
  row; the decoder mixes frames (temporal residual blocks, a 3-D output
  convolution over each video's F frames), so `num_frames` is part of the
  program: one per (shape, num_frames). The pipeline decodes in chunks of
  `decode_chunk_size` frames, each chunk one video of that many frames, and
  finds `num_frames` in `forward`'s signature, as it does here.
- diffusers' class has no tiling and no slicing (`enable_tiling` and
  `enable_slicing` raise), and neither has this adapter: "auto" never tiles.
- Latents as the pipeline scales them: `z * scaling_factor`.
"""

import functools

import jax
import jax.numpy as jnp
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.temporal_decoder", "TemporalDecoderVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderKLTemporalDecoder, ModelMixin  # noqa: F401
from diffusers.models.resnet import Downsample2D, ResnetBlock2D, SpatioTemporalResBlock
from diffusers.models.autoencoders.vae import DecoderOutput

from torchax_vae.engine import validation
from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.models.kl import KL, KLVAE, latent_shape, video_channels  # noqa: F401  (the module functions every family has)
from torchax_vae.facade.policy import refused

__all__ = ["TemporalDecoder", "TemporalDecoderVAE", "latent_shape", "video_channels"]


class TemporalDecoder(KL):
    """diffusers' `AutoencoderKLTemporalDecoder`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLTemporalDecoder
    marked = (ResnetBlock2D, Downsample2D, SpatioTemporalResBlock, TorchaxGroupNorm)
    settings = ()  # no tiling attributes in diffusers' class
    batch_is_frames = True  # the command's latents [F, C, h, w] are one video: it writes them as one MP4

    def decode_inputs(self, latents: torch.Tensor, *, timestep=None, noise_scale=None, seed: int = 0):
        """The command's and the service's latents [F, C, h, w] are one video's frames: `num_frames` is F."""
        latents, _ = super().decode_inputs(latents, timestep=timestep, noise_scale=noise_scale, seed=seed)
        return latents, (latents.shape[0],)

    # ----- the calls -----

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return False  # nothing to tile with

    def decode(self, source, tiled: bool | None = None, num_frames: int | None = None) -> jax.Array:
        """One decoder program on [B x F, C, h, w] for `num_frames` (None: the whole batch is one video)."""
        frames = source.shape[0] if num_frames is None else num_frames
        step = functools.partial(self._decode_step, num_frames=frames)
        return self.engine.run_batch(f"decoder/{frames}f", step, {"decoder": self.engine.weights["decoder"]}, source.take())

    def _decode_step(self, weights, latents, *, num_frames: int):
        """diffusers' decode: the decoder with `num_frames` and an all-zero `image_only_indicator` [B, F]."""
        indicator = jnp.zeros((latents.shape[0] // num_frames, num_frames), latents.dtype)
        return self.lowered.decode_step(weights, latents, indicator, num_frames=num_frames)


class TemporalDecoderVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLTemporalDecoder`, as diffusers runs it (the module docstring)."""

    family = TemporalDecoder

    def decode(self, z: torch.Tensor, num_frames: int, return_dict: bool = True):
        """Decodes latents [B x num_frames, C, h, w], each run of `num_frames` one video, into frames
        [B x num_frames, C, H, W], as diffusers does."""
        return self._decoder_output(self._decode_call(z, num_frames), return_dict)

    def _decode_call(self, z: torch.Tensor, num_frames: int):
        validation.check_video(z, name="decode input", channels=self.latent_channels, role="decoder", rank=self.rank,
                                  dtype=self.dtype)
        frames = self._num_frames(num_frames, z.shape[0])
        return self._prepare(functools.partial(self._family.decode_chunks, num_frames=frames), z)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None,
                num_frames: int = 1):
        """Encode then decode, as diffusers' (the pipeline reads `num_frames` from this signature)."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z, num_frames=num_frames).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def tiled_encode(self, x: torch.Tensor):
        raise AttributeError("AutoencoderKLTemporalDecoder has no tiling")

    def tiled_decode(self, z: torch.Tensor, return_dict: bool = True):
        raise AttributeError("AutoencoderKLTemporalDecoder has no tiling")

    def _tiled_encode(self, x: torch.Tensor):
        raise AttributeError("AutoencoderKLTemporalDecoder has no tiling")

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("use_tiling", "use_slicing")

    enable_tiling = refused("tiling")

    enable_slicing = refused("slicing")

    def disable_tiling(self) -> None:
        """Nothing to disable (diffusers' sets a flag that nothing reads)."""

    def disable_slicing(self) -> None:
        """Nothing to disable (diffusers' sets a flag that nothing reads)."""

    @staticmethod
    def _num_frames(num_frames, batch: int) -> int:
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1 or batch % num_frames:
            raise ValueError(f"num_frames must be a positive int dividing the latents' batch of {batch} "
                             f"(B videos x num_frames frames), got {num_frames!r}")
        return num_frames

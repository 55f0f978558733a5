"""Stable Audio 3's VAE: diffusers' AutoencoderSAME (StableAudio3Pipeline's `vae`).

How diffusers runs it, and how this adapter does:

- Waveforms [B, audio_channels, samples] (stereo, 44.1 kHz released); latents [B, latent_dim, L]. `encode` groups
  samples into patches of `patch_size` (the waveform right-padded with zeros to whole patches), runs the encoder's
  transformer resampling levels (each pads to its stride and crops the latents its padding made: L is
  ceil(ceil(samples / patch) / stride) level by level) and the soft-norm bottleneck (`x * scale + bias`, divided by
  its `running_std`). No posterior: `encode` gives the latents themselves.
- `decode` multiplies by `running_std`, runs the decoder's levels and ungroups the patches: L x prod(strides) x
  patch samples.
- One program per input length each way; no tiling, no slicing (diffusers' class has neither).
"""

import math

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.same", "SAMEVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderSAME, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_same import AutoencoderSAMEDecoderOutput, AutoencoderSAMEOutput
from diffusers.models.autoencoders.vae import IdentityDistribution

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["SAME", "SAMEVAE"]


class SAMELowered(Lowered):
    """encode: patches, the encoder, the bottleneck; decode: the bottleneck undone, the decoder, the patches undone."""

    def encode_step(self, weights, sample):
        dtype = sample.dtype
        weights, sample = self.env.j2t_iso((weights, sample))
        with self._tracing(dtype, sample.shape, 1):
            x = self._call("encoder", weights, self.model.patch_embed.encode(sample))
            bottleneck = weights["bottleneck"]
            x = (x * bottleneck["scale"] + bottleneck["bias"]) / bottleneck["running_std"]
        return self.env.t2j_iso(x)

    def decode_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            x = self._call("decoder", weights, latents * weights["bottleneck"]["running_std"])
            x = self.model.patch_embed.decode(x)
        return self.env.t2j_iso(x)


class SAME(Family):
    """diffusers' `AutoencoderSAME`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderSAME
    rank = 3
    pipeline_layout = decoded_layout = "BCT"
    posterior_class = IdentityDistribution  # `encode` gives the latents themselves

    def lower(self, vae):
        return self.lowering_on(SAMELowered, vae, (), 1, rank=3)

    video_channels = config_value("audio_channels")

    latent_channels = config_value("latent_dim")

    @property
    def spatial_compression_ratio(self) -> int:
        return self.config.patch_size * math.prod(self.config.encoder_strides)  # diffusers' downsampling_ratio

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        length = -(-samples // self.config.patch_size)
        for stride in self.config.encoder_strides:
            length = -(-length // stride)
        return (batch, self.latent_channels, length)

    def decoded_samples(self, latents: int) -> int:
        return latents * self.spatial_compression_ratio

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # the bottleneck normalizes inside encode

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("encoder", "bottleneck")}
        return self.engine.run_batch("encoder", self.lowered.encode_step, weights, source.take())

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("decoder", "bottleneck")}
        return self.engine.run_batch("decoder", self.lowered.decode_step, weights, source.take())


class SAMEVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderSAME` (the module docstring)."""

    family = SAME

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self.downsampling_ratio = vae.downsampling_ratio  # diffusers' attribute of the instance

    def encode(self, sample: torch.Tensor, return_dict: bool = True):
        """The latents [B, latent_dim, L] of waveforms [B, audio_channels, samples], as diffusers' (no posterior)."""
        latents = self._encode_with(sample, "encode")
        return AutoencoderSAMEOutput(latents=latents) if return_dict else (latents,)

    def decode(self, latents: torch.Tensor, return_dict: bool = True):
        """The waveforms [B, audio_channels, L x downsampling_ratio] of latents, as diffusers'."""
        sample = TorchaxVAE.decode(self, latents, return_dict=False)[0]
        return AutoencoderSAMEDecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, return_dict: bool = True):
        """Encode, then decode (a reconstruction), as diffusers' `forward`."""
        return self.decode(self.encode(sample).latents, return_dict=return_dict)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "enable_slicing", "disable_slicing", "disable_tiling",
                       "use_tiling")

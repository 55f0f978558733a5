"""LongCat's audio VAE: diffusers' LongCatAudioDiTVae (LongCatAudioDiTPipeline's `vae`).

How diffusers runs it, and how this adapter does:

- Waveforms [B, in_channels, samples] (mono, 24 kHz released); latents [B, latent_dim, samples / hop], hop the
  product of the encoder's strides (its `strides`, filled out to one per level as the encoder fills them). A
  waveform must be a whole number of hops (the encoder's averaging shortcuts reshape by each stride).
- `encode` runs the weight-normalized Snake encoder (one program per length), whose output is a mean and a scale on
  channels; diffusers then draws `mean + (softplus(scale) + 1e-4) * noise` (its default, `sample_posterior=True`,
  the noise from the call's `generator` as diffusers draws it) or keeps the mean, and divides by `config.scale`.
  Here the draw happens on the host from the program's moments, with diffusers' `randn_tensor`, so the latents
  are the same for the same generator.
- `decode` multiplies by `config.scale` and runs the decoder: one program per latent length.
- The pipeline holds latents as [B, L, C] and decodes `latents.permute(0, 2, 1)` (`pipeline_layout` "BTC").
- No tiling and no slicing (diffusers' class has neither).
"""

import functools
import math

import jax
import torch
import torch.nn.functional as F
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.longcat_audio", "LongCatAudioVAE"] entry by
# looking the base class up in this module.
from diffusers import LongCatAudioDiTVae, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_longcat_audio_dit import (
    LongCatAudioDiTVaeDecoderOutput,
    LongCatAudioDiTVaeEncoderOutput,
)
from diffusers.utils.torch_utils import randn_tensor

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import OneChildLowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import refused

__all__ = ["LongCatAudio", "LongCatAudioVAE", "Posterior", "strides"]


class Posterior:
    """diffusers' posterior of this class, which it draws inside `encode`: parameters [mean, std] / config.scale on
    channels (std = softplus(scale) + 1e-4), so that `mode()` is diffusers' `sample_posterior=False` latents and
    `sample(generator)` its draw with that generator (the noise of the mean's shape and dtype)."""

    def __init__(self, parameters: torch.Tensor):
        self.parameters = parameters
        self.mean, self.std = parameters.chunk(2, dim=1)

    def mode(self) -> torch.Tensor:
        return self.mean

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        noise = randn_tensor(self.mean.shape, generator=generator, device=self.mean.device, dtype=self.mean.dtype)
        return self.mean + self.std * noise


def strides(config) -> list[int]:
    """The encoder's strides, one per level, as `AudioDiTVaeEncoder` fills them out."""
    levels = len(config.c_mults or [1, 2, 4, 8, 16])
    out = list(config.strides or [2] * levels)
    if len(out) < levels:
        out.extend([out[-1] if out else 2] * (levels - len(out)))
    return out[:levels]


class LongCatLowered(OneChildLowered):
    """The encoder (its moments) and the decoder (of latents times `config.scale`), each one call."""

    def decode_step(self, weights, latents, *, scale: float):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            out = self._call("decoder", weights, latents * scale)
        return self.env.t2j_iso(out)


class LongCatAudio(Family):
    """diffusers' `LongCatAudioDiTVae`, as diffusers runs it (the module docstring)."""

    model_class = LongCatAudioDiTVae
    rank = 3
    decoded_layout = "BCT"
    pipeline_layout = "BTC"  # LongCatAudioDiTPipeline's latents [B, L, C]
    posterior_class = Posterior  # made by LongCatAudioVAE._posterior (the command's and the service's encodes)

    def lower(self, vae):
        return self.lowering_on(LongCatLowered, vae, (), 1, rank=3)

    video_channels = config_value("in_channels")

    latent_channels = config_value("latent_dim")

    @property
    def spatial_compression_ratio(self) -> int:
        return math.prod(strides(self.config))  # samples per latent

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        return (batch, self.latent_channels, samples // self.spatial_compression_ratio)

    def decoded_samples(self, latents: int) -> int:
        return latents * self.spatial_compression_ratio

    def check_video(self, shape, name: str) -> None:
        hop = self.spatial_compression_ratio
        if shape[2] % hop:
            raise ValueError(f"{name} has {shape[2]} samples (shape {tuple(shape)}); LongCatAudioDiTVae encodes whole "
                             f"hops of {hop} samples (its strides {strides(self.config)}): pad to "
                             f"{-(-shape[2] // hop) * hop}")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # diffusers' encode divides by config.scale itself

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        return self.engine.run_batch("encoder", self.lowered.encode_step, {"encoder": self.engine.weights["encoder"]},
                                       source.take())

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        step = functools.partial(self.lowered.decode_step, scale=float(self.config.scale))
        return self.engine.run_batch("decoder", step, {"decoder": self.engine.weights["decoder"]}, source.take())


class LongCatAudioVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `LongCatAudioDiTVae` (the module docstring)."""

    family = LongCatAudio

    def encode(self, sample: torch.Tensor, sample_posterior: bool = True, return_dict: bool = True,
               generator: torch.Generator | None = None):
        """The latents [B, latent_dim, samples / hop] of waveforms, as diffusers' `encode`: drawn from the posterior
        with `generator` (its default) or its mean, divided by `config.scale`."""
        mean, scale = self._encode_with(sample, "encode").chunk(2, dim=1)  # (torch tensors, as `sample`)
        if sample_posterior:
            std = F.softplus(scale) + 1e-4
            noise = randn_tensor(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
            latents = mean + std * noise
        else:
            latents = mean
        latents = (latents / self.config.scale).float()  # (diffusers: float32 whatever the encoder's dtype)
        return LongCatAudioDiTVaeEncoderOutput(latents=latents) if return_dict else (latents,)

    def _posterior(self, x: torch.Tensor) -> Posterior:
        mean, scale = self._encode_with(x, "encode").float().chunk(2, dim=1)
        return Posterior(torch.cat([mean, F.softplus(scale) + 1e-4], dim=1) / self.config.scale)

    def decode(self, latents: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, latent_dim, L] into waveforms [B, in_channels, L x hop], as diffusers does."""
        sample = TorchaxVAE.decode(self, latents, return_dict=False)[0]
        return LongCatAudioDiTVaeDecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator: torch.Generator | None = None):
        """Encode then decode, as diffusers' `forward`."""
        latents = self.encode(sample, sample_posterior=sample_posterior, generator=generator).latents
        decoded = self.decode(latents).sample
        return LongCatAudioDiTVaeDecoderOutput(sample=decoded) if return_dict else (decoded,)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "use_tiling")

    enable_tiling = refused("tiling")

    enable_slicing = refused("slicing")

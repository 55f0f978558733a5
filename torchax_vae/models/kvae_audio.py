"""Kandinsky's audio VAE: diffusers' AutoencoderKLKVAEAudio (KVAE-Audio; no diffusers pipeline uses it).

How diffusers runs it, and how this adapter does:

- Waveforms [B, num_channels, samples] (48 kHz mono released); latents [B, codebook_dim, samples / hop], hop = the
  product of `encoder_rates` (960 released).
- `encode` pads the waveform on the right to whole hops, runs the weight-normalized Snake encoder, its
  self-attention over time (on [B, T, C]) and the `in_proj` bottleneck: the posterior's moments, a
  `DiagonalGaussianDistribution`. One program per input length here.
- `decode` is `out_proj` and the decoder, one program per latent length: samples = latents x the product of
  `decoder_rates`. `forward` crops its output to the input's length, as diffusers'.
- Slicing as diffusers' (one clip per call); no tiling (diffusers' `enable_tiling` raises for this class, and so
  does this adapter's). No latent normalization: no pipeline scales its latents.
"""

import functools
import math

import torch
import torch.nn.functional as F
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.kvae_audio", "KVAEAudioVAE"] entry by looking
# the base class up in this module.
from diffusers import AutoencoderKLKVAEAudio, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import refused

__all__ = ["KVAEAudio", "KVAEAudioVAE"]


class AudioLowered(Lowered):
    """The encode and decode of the module docstring, pure in JAX arrays."""

    def encode_step(self, weights, sample, *, hop: int):
        dtype = sample.dtype
        weights, sample = self.env.j2t_iso((weights, sample))
        with self._tracing(dtype, sample.shape, 1):
            sample = F.pad(sample, (0, (-sample.shape[-1]) % hop))  # AutoencoderKLKVAEAudio._pad_to_hop_length
            hidden = self._call("encoder", weights, sample)
            hidden = self._call("attn", weights, hidden.transpose(1, 2)).transpose(1, 2).contiguous()
            moments = self._call("in_proj", weights, hidden)
        return self.env.t2j_iso(moments)

    def decode_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            out = self._call("decoder", weights, self._call("out_proj", weights, latents))
        return self.env.t2j_iso(out)


class KVAEAudio(Family):
    """diffusers' `AutoencoderKLKVAEAudio`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLKVAEAudio
    rank = 3
    pipeline_layout = decoded_layout = "BCT"

    def lower(self, vae):
        return self.lowering_on(AudioLowered, vae, (), 1, rank=3)

    @property
    def hop_length(self) -> int:
        return math.prod(int(rate) for rate in self.config.encoder_rates)

    video_channels = config_value("num_channels")

    latent_channels = config_value("codebook_dim")

    @property
    def spatial_compression_ratio(self) -> int:
        return self.hop_length  # samples per latent

    sampling_rate = config_value("sample_rate")

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        return (batch, self.latent_channels, -(-samples // self.hop_length))

    def decoded_samples(self, latents: int) -> int:
        return latents * math.prod(int(rate) for rate in self.config.decoder_rates)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # (no pipeline normalizes its latents)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def encode(self, source, tiled: bool | None = None):
        weights = {k: self.engine.weights[k] for k in ("encoder", "attn", "in_proj")}
        step = functools.partial(self.lowered.encode_step, hop=self.hop_length)
        return self.engine.run_batch("encoder", step, weights, source.take())

    def decode(self, source, tiled: bool | None = None):
        weights = {k: self.engine.weights[k] for k in ("out_proj", "decoder")}
        return self.engine.run_batch("decoder", self.lowered.decode_step, weights, source.take())


class KVAEAudioVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLKVAEAudio` (the module docstring)."""

    family = KVAEAudio

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self.hop_length = vae.hop_length  # diffusers' attribute of the instance

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, cropped to the input's length, as diffusers'."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        decoded = self.decode(z).sample[..., : sample.shape[-1]]
        return DecoderOutput(sample=decoded) if return_dict else (decoded,)

    __call__ = forward

    enable_tiling = refused("tiling")

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "use_tiling")

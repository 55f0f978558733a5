"""Cosmos 3's sound: diffusers' Cosmos3AVAEAudioTokenizer (Cosmos3OmniPipeline's `sound_tokenizer`).

How diffusers runs it, and how this adapter does:

- `decode(latents)` ([B, C, T], or one [C, T]) runs the Oobleck-style SnakeBeta decoder and clamps the waveform to
  [-1, 1]: [B, dec_out_channels, T x hop] at `config.sampling_rate` (48 kHz stereo released). It returns the
  tensor itself, not an output class: the pipeline's `decode_sound` calls it directly. One program per latent
  length.
- `encode` (a waveform's STFT spectrogram through a ConvNeXt encoder, peak-normalized over the whole batch) is not
  run here: refused in one line (encode with the diffusers model; docs/limits.md). Its pipeline only decodes.
- No tiling and no slicing (diffusers' class has neither).
"""

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.cosmos3_audio", "Cosmos3AudioVAE"] entry by
# looking the base class up in this module.
from diffusers import Cosmos3AVAEAudioTokenizer, ModelMixin  # noqa: F401

from ..family import Family
from ..lowering import OneChildLowered
from ..vae import TorchaxVAE
from .kl import _where_diffusers_has

__all__ = ["Cosmos3Audio", "Cosmos3AudioVAE"]

ENCODE_NOT_RUN = ("Cosmos3AVAEAudioTokenizer.encode (a waveform's STFT spectrogram, then its ConvNeXt encoder) is not "
                  "run on JAX: encode with the diffusers model; Cosmos 3's pipeline only decodes sound (docs/limits.md)")


class DecoderLowered(OneChildLowered):
    """The decoder (lowering.OneChildLowered), clamped to [-1, 1] as diffusers' `decode` clamps it."""

    def decode_step(self, weights, latents):
        return jax.numpy.clip(super().decode_step(weights, latents), -1.0, 1.0)


class Cosmos3Audio(Family):
    """diffusers' `Cosmos3AVAEAudioTokenizer`, as diffusers runs its decode (the module docstring)."""

    model_class = Cosmos3AVAEAudioTokenizer
    rank = 3
    pipeline_layout = decoded_layout = "BCT"

    def lower(self, vae):
        placement = self.engine.placement
        return DecoderLowered(vae, placement.mesh, placement.platform, (), 1, rank=3)

    @property
    def video_channels(self) -> int:
        return self.config.dec_out_channels

    @property
    def latent_channels(self) -> int:
        return self.config.vocoder_input_dim

    @property
    def spatial_compression_ratio(self) -> int:
        strides = 1
        for stride in self.config.dec_strides:
            strides *= int(stride)
        return strides  # samples per latent

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        return (batch, self.latent_channels, -(-samples // self.spatial_compression_ratio))

    def decoded_samples(self, latents: int) -> int:
        """Samples per channel of `latents` latent frames: each decoder block's transposed convolution (kernel 2s,
        stride s, padding ceil(s / 2), output padding s mod 2) in turn: s samples per input frame, odd or even."""
        for stride in reversed(self.config.dec_strides):
            latents = (latents - 1) * stride - 2 * -(-stride // 2) + 2 * stride + stride % 2
        return latents

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # no latent normalization (diffusers' class refuses one)

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        out = self.engine.programs.run("decoder", self.lowered.decode_step, {"decoder": self.engine.weights["decoder"]},
                                       source.take())
        self.engine.ran_batch(out)
        return out

    def encode(self, source, tiled: bool | None = None):
        raise NotImplementedError(ENCODE_NOT_RUN)


class Cosmos3AudioVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `Cosmos3AVAEAudioTokenizer` (the module docstring)."""

    family = Cosmos3Audio

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self._hop_size = vae._hop_size  # diffusers' attribute of the instance (the pipeline reads it)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """The waveform [B, channels, samples] (of one [C, T]: [channels, samples]) in [-1, 1], as diffusers'."""
        if isinstance(latents, torch.Tensor) and latents.ndim == 2:
            return TorchaxVAE.decode(self, latents.unsqueeze(0), return_dict=False)[0].squeeze(0)
        return TorchaxVAE.decode(self, latents, return_dict=False)[0]

    def encode(self, sample: torch.Tensor, return_dict: bool = True, force_pad: bool = False):
        raise NotImplementedError(ENCODE_NOT_RUN)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator=None, force_pad: bool = False):
        raise NotImplementedError(ENCODE_NOT_RUN)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    tiled_encode = _where_diffusers_has(TorchaxVAE.tiled_encode)
    tiled_decode = _where_diffusers_has(TorchaxVAE.tiled_decode)
    enable_slicing = _where_diffusers_has(TorchaxVAE.enable_slicing)
    disable_slicing = _where_diffusers_has(TorchaxVAE.disable_slicing)
    disable_tiling = _where_diffusers_has(TorchaxVAE.disable_tiling)

    @property
    def use_tiling(self) -> bool:  # diffusers' class has no such flag
        raise AttributeError("Cosmos3AVAEAudioTokenizer has no use_tiling (no tiling)")

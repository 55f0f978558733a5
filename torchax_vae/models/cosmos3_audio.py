"""Cosmos 3's sound: diffusers' Cosmos3AVAEAudioTokenizer (Cosmos3OmniPipeline's `sound_tokenizer`).

How diffusers runs it, and how this adapter does:

- `decode(latents)` ([B, C, T], or one [C, T]) runs the Oobleck-style SnakeBeta decoder and clamps the waveform to
  [-1, 1]: [B, dec_out_channels, T x hop] at `config.sampling_rate` (48 kHz stereo released). It returns the
  tensor itself, not an output class: the pipeline's `decode_sound` calls it directly. One program per latent
  length.
- `encode(sample)` ([B, C, T]): peak-normalized over the whole batch (`normalize_volume`), right-padded to whole
  hops (in eval mode, as diffusers), cast to the encoder's dtype, then its STFT spectrogram (in float32, as
  diffusers computes it) through the ConvNeXt encoder: one program per waveform shape, the batch-wide peak inside
  it. diffusers' Oobleck posterior class. Its pipeline only decodes; `forward` encodes and decodes, as diffusers'.
- No tiling and no slicing (diffusers' class has neither).
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.cosmos3_audio", "Cosmos3AudioVAE"] entry by
# looking the base class up in this module.
from diffusers import Cosmos3AVAEAudioTokenizer, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_oobleck import OobleckDiagonalGaussianDistribution

from torchax_vae.engine import validation
from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import OneChildLowered
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["Cosmos3Audio", "Cosmos3AudioVAE"]

DECODER_ONLY = ("This Cosmos3 AVAE sound tokenizer was loaded from decoder-only weights and cannot encode audio. "
                "Re-convert the AVAE checkpoint with encoder weights to use `encode()`.")  # diffusers' own words


class Cosmos3Lowered(OneChildLowered):
    """The decoder (lowering.OneChildLowered), clamped to [-1, 1] as diffusers' `decode` clamps it; the encode as
    diffusers' `encode` in eval mode."""

    def decode_step(self, weights, latents):
        return jax.numpy.clip(super().decode_step(weights, latents), -1.0, 1.0)

    def encode_step(self, weights, sample, *, normalize: bool, padding: int):
        dtype = sample.dtype
        weights, sample = self.env.j2t_iso((weights, sample))
        with self._tracing(dtype, sample.shape, 1):
            if normalize:  # one peak for the whole batch, as diffusers'
                sample = sample / (sample.abs().max() + 1e-5) * 0.95
            if padding:
                sample = torch.nn.functional.pad(sample, (0, padding), mode="constant", value=0)
            moments = self._call("encoder", weights, sample).transpose(1, 2)  # Cosmos3AVAEAudioTokenizer._encode
        return self.env.t2j_iso(moments)


class Cosmos3Audio(Family):
    """diffusers' `Cosmos3AVAEAudioTokenizer`, as diffusers runs its decode (the module docstring)."""

    model_class = Cosmos3AVAEAudioTokenizer
    posterior_class = OobleckDiagonalGaussianDistribution  # diffusers' encode returns it
    rank = 3
    pipeline_layout = decoded_layout = "BCT"

    def lower(self, vae):
        return self.lowering_on(Cosmos3Lowered, vae, (), 1, rank=3)

    video_channels = config_value("dec_out_channels")

    latent_channels = config_value("vocoder_input_dim")

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
        return self.engine.run_batch("decoder", self.lowered.decode_step, {"decoder": self.engine.weights["decoder"]},
                                       source.take())

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        hop = self.spatial_compression_ratio
        options = {"normalize": bool(self.config.normalize_volume), "padding": (-source.shape[2]) % hop}
        step = functools.partial(self.lowered.encode_step, **options)
        return self.engine.run_batch("encoder", step, {"encoder": self.engine.weights["encoder"]}, source.take())


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
        """Encodes a waveform [B, C, T] into diffusers' Oobleck posterior, as diffusers' `encode` in eval mode (a
        TorchaxVAE does not train: the padding to whole hops always applies, as `force_pad` asks)."""
        from diffusers.models.autoencoders.autoencoder_cosmos3_audio import Cosmos3AudioEncoderOutput

        if not isinstance(sample, torch.Tensor) or sample.ndim != 3:
            shape = tuple(sample.shape) if isinstance(sample, torch.Tensor) else type(sample).__name__
            raise ValueError(f"`sample` must have shape [B, C, T], got {shape}.")
        if "encoder" not in self._engine.weights:
            raise ValueError(DECODER_ONLY)
        channels = self.config.input_channels * (2 if self.config.stereo else 1)
        validation.check_video(sample, name="encode input", channels=channels, role="encoder", rank=3)
        moments = self._compute(self._family.encode, sample.to(self.dtype))  # diffusers casts to the encoder's dtype
        posterior = self.posterior_class(moments)
        return Cosmos3AudioEncoderOutput(latent_dist=posterior) if return_dict else (posterior,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator=None, force_pad: bool = False):
        """Encode then decode (the posterior's mode, or a draw with `generator`), as diffusers' forward."""
        from diffusers.models.autoencoders.autoencoder_cosmos3_audio import Cosmos3AudioDecoderOutput

        posterior = self.encode(sample, force_pad=force_pad).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        audio = self.decode(z)
        return Cosmos3AudioDecoderOutput(sample=audio) if return_dict else (audio,)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "enable_slicing", "disable_slicing", "disable_tiling",
                       "use_tiling")

"""MiniMax H3's audio VAE: diffusers' AutoencoderKLMiniMaxH3Audio (the modular MiniMax H3 pipeline's `audio_vae`).

How diffusers runs it, and how this adapter does:

- Mono 32 kHz waveforms [B, 1, samples] (the pipeline passes a stereo clip's
  two channels as a batch of 2); latents [B, latent_channels, samples / hop],
  hop = the product of `encoder_rates` (800 released).
- `encode` pads the waveform on the right to whole hops, runs the DAC-style
  encoder, the causal-attention projection `pre_block` (on [B, T, C]) and the
  two 1x1 heads `mean_proj` and `logs_proj`: one program per input length
  here, whose moments are the two heads on channels. Its posterior is
  diffusers' own `MiniMaxH3AudioDiagonalGaussianDistribution(mean, logs)`.
- `decode` is `dec_in_proj` and the BigVGAN decoder, one program per latent
  length: samples = latents x hop, clamped to [-1, 1] by the decoder.
- No tiling and no slicing (diffusers' class has neither); every module stays
  float32 under any dtype, as diffusers keeps them (`_keep_in_fp32_modules`
  names all of them: its bf16 decodes are ~20 dB quieter).
- The pipeline normalizes the latents with the config's `latents_mean` /
  `latents_std` over channels ([1, C, 1]).
"""

import functools

import torch
import torch.nn.functional as F
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.minimax_h3_audio", "MiniMaxH3AudioVAE"] entry by
# looking the base class up in this module.
from diffusers import AutoencoderKLMiniMaxH3Audio, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_minimax_h3_audio import (
    MiniMaxH3AudioDiagonalGaussianDistribution,
    MiniMaxH3AudioEncoderOutput,
)

from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["MiniMaxH3Audio", "MiniMaxH3AudioVAE"]


class Posterior(MiniMaxH3AudioDiagonalGaussianDistribution):
    """diffusers' posterior of this class, made from the moments (mean and logs on channels) as the facade holds
    them."""

    def __init__(self, moments: torch.Tensor):
        super().__init__(*moments.chunk(2, dim=1))


class AudioLowered(Lowered):
    """The encode and decode of the module docstring, pure in JAX arrays."""

    def encode_step(self, weights, sample, *, hop: int):
        dtype = sample.dtype
        weights, sample = self.env.j2t_iso((weights, sample))
        with self._tracing(dtype, sample.shape, 1):
            sample = F.pad(sample, (0, (-sample.shape[-1]) % hop)).to(next(iter(weights["encoder"].values())).dtype)
            hidden = self._call("encoder", weights, sample)
            hidden = self._call("pre_block", weights, hidden.transpose(1, 2)).transpose(1, 2)
            moments = torch.cat([self._call("mean_proj", weights, hidden), self._call("logs_proj", weights, hidden)], 1)
        return self.env.t2j_iso(moments.float())

    def decode_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        with self._tracing(dtype, latents.shape, 1):
            latents = latents.to(next(iter(weights["dec_in_proj"].values())).dtype)
            out = self._call("decoder", weights, self._call("dec_in_proj", weights, latents))
        return self.env.t2j_iso(out.float())


class MiniMaxH3Audio(Family):
    """diffusers' `AutoencoderKLMiniMaxH3Audio`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLMiniMaxH3Audio
    rank = 3
    pipeline_layout = decoded_layout = "BCT"
    posterior_class = Posterior
    casts_inputs = True

    def lower(self, vae):
        return self.lowering_on(AudioLowered, vae, (), 1, rank=3)

    @property
    def hop_length(self) -> int:
        rates = self.config.encoder_rates
        hop = 1
        for rate in rates:
            hop *= int(rate)
        return hop

    @property
    def video_channels(self) -> int:
        return 1  # mono: diffusers' encode takes [B, 1, samples]

    @property
    def spatial_compression_ratio(self) -> int:
        return self.hop_length  # samples per latent

    sampling_rate = config_value("sampling_rate")

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        return (batch, self.config.latent_channels, -(-samples // self.hop_length))

    def _statistics(self, latents: torch.Tensor):
        shape = (1, self.config.latent_channels, 1)
        mean, std = self.config.latents_mean, self.config.latents_std
        if mean is None or std is None:
            raise ValueError("this AutoencoderKLMiniMaxH3Audio's config has no latents_mean / latents_std, which "
                             "MiniMax H3's pipeline normalizes its audio latents with")
        return (torch.tensor(mean).view(shape).to(latents.device, latents.dtype),
                torch.tensor(std).view(shape).to(latents.device, latents.dtype))

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return (latents - mean) / std

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return latents * std + mean  # as MiniMax H3's audio decode step

    def encode(self, source, tiled: bool | None = None):
        step = functools.partial(self.lowered.encode_step, hop=self.hop_length)
        weights = {k: self.engine.weights[k] for k in ("encoder", "pre_block", "mean_proj", "logs_proj")}
        return self.engine.run_batch("encoder", step, weights, source.take())

    def decode(self, source, tiled: bool | None = None):
        weights = {k: self.engine.weights[k] for k in ("dec_in_proj", "decoder")}
        return self.engine.run_batch("decoder", self.lowered.decode_step, weights, source.take())


class MiniMaxH3AudioVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLMiniMaxH3Audio` (the module docstring)."""

    family = MiniMaxH3Audio

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self.hop_length = vae.hop_length  # diffusers' attribute of the instance

    def encode(self, sample: torch.Tensor, return_dict: bool = True):
        """Encodes mono waveforms [B, 1, samples] into diffusers' `MiniMaxH3AudioDiagonalGaussianDistribution`."""
        posterior = self._posterior(sample)
        return MiniMaxH3AudioEncoderOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, latents: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, L] into waveforms [B, 1, L x hop], as diffusers does."""
        return TorchaxVAE.decode(self, latents, return_dict=return_dict)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode (diffusers' argument order for this class: return_dict before generator)."""
        return TorchaxVAE.forward(self, sample, sample_posterior, return_dict, generator)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "enable_slicing", "disable_slicing", "disable_tiling",
                       "use_tiling")

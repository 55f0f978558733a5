"""MiniMax Music 3's vocoder: diffusers' MiniMaxMusic3Vocoder (the modular pipeline's `vocoder`, its whole stage 3).

How diffusers runs it, and how this adapter does: MiniMax Music 3's modular pipeline denoises a song in windows of
200 autoregressive frames (689 latent frames of 512 samples at 44.1 kHz, released), and its decode step
(`MiniMaxMusic3VocoderDecodeStep`) calls `vocoder(latents)` on each window's latents [B, latent_channels, L], crops
the overlap (every window after the first loses its first 86 latent frames' samples, every one before the last its
last 258) and joins them: the stereo song [B, 2, samples] in [-1, 1].

- The vocoder has no encoder and no cache: its forward folds the latents' channels into two streams (the stereo
  channels as a batch of 2B), a weight-normalized 1-D convolution stack with Snake activations upsamples each by
  the product of `upsampling_ratios` (transposed convolutions of kernel 2s, stride s, padding ceil(s / 2)), and
  `tanh` ends it. Here that forward is one program of (weights, latents), traced whole, compiled once per window
  length (a song is full windows and one last, shorter one: two programs).
- The facade (`TorchaxVAE(pipe.vocoder)`, given to the pipeline with `update_components(vocoder=...)`) is called as
  diffusers' module is, `vocoder(latents)`, and lacks what the vocoder lacks (`encode`, `decode`, tiling, slicing).
- `song(windows)` is the decode step's crop and join of the windows' waveforms (torchax_vae/stage3/sound_families.py's
  `VocoderSound`: what `torchax-vae decode` and the service run).
"""

import math

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.minimax_music3", "MiniMaxMusic3VocoderModel"]
# entry by looking the base class up in this module.
from diffusers import MiniMaxMusic3Vocoder, ModelMixin  # noqa: F401
from diffusers.modular_pipelines.minimax_music3.decoders import _CROP_LEFT_LATENT, _CROP_RIGHT_LATENT

from torchax_vae.engine import validation
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.vocoders import VocoderFacade, VocoderFamily
from torchax_vae.facade.family import config_value

__all__ = ["MiniMaxMusic3VocoderModel", "MusicVocoder", "sample_length", "song"]


def sample_length(config, latents: int) -> int:
    """Samples per channel that `latents` latent frames decode to: each block's transposed convolution in turn."""
    for stride in config.upsampling_ratios:
        latents = (latents - 1) * stride - 2 * math.ceil(stride / 2) + 2 * stride
    return latents


def song(waveforms: list[torch.Tensor], hop: int) -> torch.Tensor:
    """The song [B, 2, samples] of the windows' waveforms, as MiniMaxMusic3VocoderDecodeStep crops and joins them:
    `hop` samples per latent frame (the pipeline's `latent_hop_length`), clamped to [-1, 1] in float32."""
    last = len(waveforms) - 1
    kept = [w[..., (0 if i == 0 else _CROP_LEFT_LATENT * hop):
              w.shape[-1] - (0 if i == last else _CROP_RIGHT_LATENT * hop)] for i, w in enumerate(waveforms)]
    return torch.cat(kept, dim=-1).float().clamp(-1.0, 1.0)


class VocoderLowered(Lowered):
    """The vocoder's forward, pure in JAX arrays."""

    def forward_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        flat = {(child if not name else f"{child}.{name}"): value
                for child, tensors in weights.items() for name, value in tensors.items()}
        with self._tracing(dtype, latents.shape, 1):
            out = torch.func.functional_call(self.model, flat, (latents,))
        return self.env.t2j_iso(out)


class MusicVocoder(VocoderFamily):
    """diffusers' `MiniMaxMusic3Vocoder`: its whole forward, one program per latent length (the module docstring)."""

    model_class = MiniMaxMusic3Vocoder  # latents [B, latent_channels, L] in, the stereo waveform [B, 2, samples] out

    def lower(self, vae):
        return self.lowering_on(VocoderLowered, vae, (), 1, rank=3)

    latent_channels = config_value("latent_channels")

    @property
    def spatial_compression_ratio(self) -> int:
        return math.prod(self.config.upsampling_ratios)  # samples per latent frame

    sampling_rate = config_value("sampling_rate")

    def decoded_samples(self, latents: int) -> int:
        return sample_length(self.config, latents)


class MiniMaxMusic3VocoderModel(VocoderFacade, TorchaxVAE):
    """`TorchaxVAE` for diffusers' `MiniMaxMusic3Vocoder`: called as diffusers' module is (the module docstring)."""

    family = MusicVocoder

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        """The stereo waveform [B, 2, samples] in [-1, 1] of Flow-VAE latents [B, latent_channels, L], as diffusers'."""
        if not isinstance(latents, torch.Tensor):
            raise TypeError(f"the vocoder's input must be a torch.Tensor, got {type(latents).__name__}")
        validation.check_video(latents, name="vocoder input", channels=self.latent_channels, role="vocoder", rank=3,
                               dtype=self.dtype)
        return self._compute(self._family.decode, latents)

    __call__ = forward

    def _shape_source(self, kind: str, shape):
        """A decode (the vocoder's call: what `plan` and `precompile` take) of latents [B, C, L]; it encodes nothing."""
        if kind != "decode":
            return super()._shape_source(kind, shape)
        shape = tuple(int(n) for n in shape)
        if len(shape) != 3 or shape[1] != self.latent_channels or not all(shape):
            raise ValueError(f"decode shape {shape}: this MiniMaxMusic3Vocoder takes latents [B, "
                             f"{self.latent_channels}, L]")
        return self._engine.shapes(shape)

    @property
    def sampling_rate(self) -> int:
        """The waveform's samples per second (`config.sampling_rate`)."""
        return self._family.sampling_rate

    def song(self, windows: list[torch.Tensor]) -> torch.Tensor:
        """The song [B, 2, samples] of the pipeline's windows of latents (its `latent_chunks`): each window vocoded,
        cropped and joined as MiniMaxMusic3VocoderDecodeStep does (`song`)."""
        return song([self(w.contiguous().to(self.dtype)) for w in windows], self.spatial_compression_ratio)

    def song_samples(self, lengths: list[int]) -> int:
        """Samples per channel of the song of windows of `lengths` latent frames, from the config alone."""
        cropped = (_CROP_LEFT_LATENT + _CROP_RIGHT_LATENT) * self.spatial_compression_ratio
        return sum(self._family.decoded_samples(n) for n in lengths) - cropped * (len(lengths) - 1)

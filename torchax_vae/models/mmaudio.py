"""Kandinsky 6's sound: diffusers' MMAudioVAE (the pipeline's `audio_vae`) and MMAudioVocoder (its `vocoder`).

How diffusers runs them, and how these adapters do: stage 3 of Kandinsky6TI2VAPipeline's sound is
`audio_vae.decode(audio_latents / scaling_factor)`, a log-mel spectrogram [B, mel_bins, frames], then
`vocoder(mel)`, the mono waveform [B, 1, samples] at the audio VAE's `sample_rate` (the pipeline keeps channel 0).

- `MMAudioVAE.decode`: the magnitude-preserving 1-D decoder of its inner autoencoder (`vae.decoder`), then the
  checkpoint's per-bin statistics (`vae.data_std`, `vae.data_mean`): one program per latent length. Latents
  [B, latent_channels, L] give 2 L mel frames.
- `MMAudioVAE.encode` takes a waveform [B, samples] through an STFT log-mel front end (`mel_converter`); it is not
  run here (refused in one line: encode with the diffusers model; docs/limits.md). Its pipeline only decodes.
- `MMAudioVocoder`: its whole forward (BigVGAN-v2 with anti-aliased Snake activations), one program per mel
  length; the facade is called as diffusers' module is, `vocoder(mel, return_dict=False)`.
- No tiling and no slicing (diffusers' classes have neither).
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.mmaudio", "MMAudioVAEModel"] entry by looking the
# base class up in this module.
from diffusers import MMAudioVAE, MMAudioVocoder, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.vae import DecoderOutput

from .. import validation
from ..family import Family
from ..lowering import Lowered
from ..vae import TorchaxVAE
from .kl import _where_diffusers_has

__all__ = ["MMAudio", "MMAudioVAEModel", "MMAudioVocoderModel", "Vocoder"]


class MMAudioLowered(Lowered):
    """The audio VAE's decode and the vocoder's forward, pure in JAX arrays."""

    def decode_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        inner = weights["vae"]
        decoder = {name.removeprefix("decoder."): t for name, t in inner.items() if name.startswith("decoder.")}
        with self._tracing(dtype, latents.shape, 1):
            mel = torch.func.functional_call(self.model.vae.decoder, decoder, (latents,))
            mel = mel * inner["data_std"] + inner["data_mean"]  # MMAudioAutoencoder.decode
        return self.env.t2j_iso(mel)

    def forward_step(self, weights, mel):
        dtype = mel.dtype
        weights, mel = self.env.j2t_iso((weights, mel))
        flat = {(child if not name else f"{child}.{name}"): value
                for child, tensors in weights.items() for name, value in tensors.items()}
        with self._tracing(dtype, mel.shape, 1):
            out = torch.func.functional_call(self.model, flat, (mel,), {"return_dict": False})[0]
        return self.env.t2j_iso(out)


class MMAudio(Family):
    """diffusers' `MMAudioVAE`, as diffusers runs its decode (the module docstring)."""

    model_class = MMAudioVAE
    rank = 3  # decode: latents [B, C, L] in, a log-mel spectrogram [B, mel_bins, frames] out
    pipeline_layout = decoded_layout = "BCT"

    def lower(self, vae):
        placement = self.engine.placement
        return MMAudioLowered(vae, placement.mesh, placement.platform, (), 1, rank=3)

    @property
    def video_channels(self) -> int:
        return self.config.mel_bins  # what decode gives, per frame

    @property
    def spatial_compression_ratio(self) -> int:
        return 2  # mel frames per latent frame

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, frames = video_shape
        return (batch, self.config.latent_channels, frames // 2)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as Kandinsky 6's pipeline, before decode

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        out = self.engine.programs.run("decoder", self.lowered.decode_step, {"vae": self.engine.weights["vae"]},
                                       source.take())
        self.engine.ran_batch(out)
        return out

    def encode(self, source, tiled: bool | None = None):
        raise NotImplementedError(ENCODE_NOT_RUN)


ENCODE_NOT_RUN = ("MMAudioVAE.encode (a waveform's STFT log-mel front end, then the encoder) is not run on JAX: "
                  "encode with the diffusers model; Kandinsky 6's pipeline only decodes sound (docs/limits.md)")


class MMAudioVAEModel(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `MMAudioVAE` (the module docstring)."""

    family = MMAudio

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self.latent_hop_length = vae.latent_hop_length  # diffusers' attribute of the instance

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, latent_channels, L] (already divided by `scaling_factor`) into the log-mel
        spectrogram [B, mel_bins, 2 L], as diffusers does."""
        return TorchaxVAE.decode(self, z, return_dict=return_dict)

    def encode(self, audio: torch.Tensor, return_dict: bool = True):
        raise NotImplementedError(ENCODE_NOT_RUN)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator=None):
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
        raise AttributeError("MMAudioVAE has no use_tiling (no tiling)")


class Vocoder(Family):
    """diffusers' `MMAudioVocoder`: its whole forward, one program per mel length (the module docstring)."""

    model_class = MMAudioVocoder
    rank = 3  # [B, num_mels, frames] in, [B, 1, samples] out
    pipeline_layout = decoded_layout = "BCT"

    def lower(self, vae):
        placement = self.engine.placement
        return MMAudioLowered(vae, placement.mesh, placement.platform, (), 1, rank=3)

    @property
    def video_channels(self) -> int:
        raise AttributeError("a vocoder encodes nothing")

    @property
    def latent_channels(self) -> int:
        return self.config.num_mels

    @property
    def spatial_compression_ratio(self) -> int:
        return 1

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        out = self.engine.programs.run("vocoder", self.lowered.forward_step, self.engine.weights, source.take())
        self.engine.ran_batch(out)
        return out

    def encode(self, source, tiled: bool | None = None):
        raise AttributeError("a vocoder encodes nothing")

    def scale_latents(self, latents):
        return latents

    def unscale_latents(self, latents):
        return latents


class MMAudioVocoderModel(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `MMAudioVocoder`: called as diffusers' module is (the module docstring)."""

    family = Vocoder

    def forward(self, mel: torch.Tensor, return_dict: bool = True):
        """The waveform [B, 1, samples] in [-1, 1] of a log-mel spectrogram [B, num_mels, frames], as diffusers'."""
        if not isinstance(mel, torch.Tensor):
            raise TypeError(f"the vocoder's input must be a torch.Tensor, got {type(mel).__name__}")
        validation.check_video(mel, name="vocoder input", channels=self.latent_channels, role="vocoder", rank=3,
                               dtype=self.dtype)
        waveform = self._compute(functools.partial(self._family.decode), mel)
        return DecoderOutput(sample=waveform) if return_dict else (waveform,)

    __call__ = forward

    # What diffusers' vocoder lacks, this lacks too (`hasattr` answers as for the wrapped class).
    encode = _where_diffusers_has(TorchaxVAE.encode)
    decode = _where_diffusers_has(TorchaxVAE.decode)
    tiled_encode = _where_diffusers_has(TorchaxVAE.tiled_encode)
    tiled_decode = _where_diffusers_has(TorchaxVAE.tiled_decode)
    enable_slicing = _where_diffusers_has(TorchaxVAE.enable_slicing)
    disable_slicing = _where_diffusers_has(TorchaxVAE.disable_slicing)
    disable_tiling = _where_diffusers_has(TorchaxVAE.disable_tiling)

    @property
    def use_tiling(self) -> bool:  # diffusers' vocoder has no such flag
        raise AttributeError("MMAudioVocoder has no use_tiling (no tiling)")

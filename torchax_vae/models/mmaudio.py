"""Kandinsky 6's sound: diffusers' MMAudioVAE (the pipeline's `audio_vae`) and MMAudioVocoder (its `vocoder`).

How diffusers runs them, and how these adapters do: stage 3 of Kandinsky6TI2VAPipeline's sound is
`audio_vae.decode(audio_latents / scaling_factor)`, a log-mel spectrogram [B, mel_bins, frames], then
`vocoder(mel)`, the mono waveform [B, 1, samples] at the audio VAE's `sample_rate` (the pipeline keeps channel 0).

- `MMAudioVAE.decode`: the magnitude-preserving 1-D decoder of its inner autoencoder (`vae.decoder`), then the
  checkpoint's per-bin statistics (`vae.data_std`, `vae.data_mean`): one program per latent length. Latents
  [B, latent_channels, L] give 2 L mel frames.
- `MMAudioVAE.encode`: a mono waveform [B, samples] through its STFT log-mel front end (`mel_converter`: reflect
  padding, a Hann-windowed STFT, magnitudes, the Slaney mel filterbank, log), standardized with the per-bin
  statistics and encoded: one program per waveform length, the STFT traced by torchax as diffusers calls it.
  The front end computes in float32 under a bf16 model (diffusers' bf16 encode fails: PyTorch's STFT takes no
  bf16, nor does XLA's FFT).
  Its pipeline only decodes; `forward` is encode then decode, as diffusers'.
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

from torchax_vae.engine import validation
from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.vocoders import VocoderFacade, VocoderFamily

__all__ = ["MMAudio", "MMAudioVAEModel", "MMAudioVocoderModel", "Vocoder"]


class MMAudioLowered(Lowered):
    """The audio VAE's decode and the vocoder's forward, pure in JAX arrays."""

    def decode_step(self, weights, latents):
        dtype = latents.dtype
        weights, latents = self.env.j2t_iso((weights, latents))
        inner = weights["vae"]
        with self._tracing(dtype, latents.shape, 1):
            mel = self._inner("decoder", inner, latents)
            mel = mel * inner["data_std"] + inner["data_mean"]  # MMAudioAutoencoder.decode
        return self.env.t2j_iso(mel)

    def encode_step(self, weights, waveform):
        """mel_converter, then MMAudioAutoencoder.encode, on [B, 1, samples] (the facade's rank-3 view)."""
        dtype = waveform.dtype
        weights, waveform = self.env.j2t_iso((weights, waveform))
        inner = weights["vae"]
        with self._tracing(dtype, waveform.shape, 1):
            # the front end in float32 under any dtype: neither PyTorch's STFT nor XLA's FFT takes bf16 (diffusers'
            # bf16 encode fails there), and it ends in float32 in diffusers' code anyway (`magnitude.float()`)
            front = {name: t.float() for name, t in weights["mel_converter"].items()}
            mel = torch.func.functional_call(self.model.mel_converter, front, (waveform[:, 0].float(),))
            mel = mel.to(waveform.dtype)  # MMAudioVAE.encode: `.to(self.dtype)`
            moments = self._inner("encoder", inner, (mel - inner["data_mean"]) / inner["data_std"])
        return self.env.t2j_iso(moments)

    def _inner(self, child: str, inner: dict, x):
        """The inner autoencoder's `child` (its encoder or decoder) on x, with its share of the inner weights."""
        own = {name.removeprefix(child + "."): t for name, t in inner.items() if name.startswith(child + ".")}
        return torch.func.functional_call(getattr(self.model.vae, child), own, (x,))

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
        return self.lowering_on(MMAudioLowered, vae, (), 1, rank=3)

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
        return self.engine.run_batch("decoder", self.lowered.decode_step, {"vae": self.engine.weights["vae"]},
                                       source.take())

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("mel_converter", "vae")}
        return self.engine.run_batch("encoder", self.lowered.encode_step, weights, source.take())

    def least_samples(self) -> int:
        """The shortest waveform diffusers' encode takes: its reflect padding needs more samples than it pads, and the
        encoder's one 2x temporal downsample needs two STFT frames (`n_fft` + `hop_length` samples with the
        padding)."""
        n_fft, hop = self.config.n_fft, self.config.hop_length
        pad = (n_fft - hop) // 2
        return max(pad + 1, n_fft + hop - 2 * pad)


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
        """Encodes a mono waveform [B, samples] in [-1, 1] into its latent distribution, as diffusers does."""
        from diffusers.models.modeling_outputs import AutoencoderKLOutput

        if not isinstance(audio, torch.Tensor) or audio.ndim != 2:
            shape = tuple(audio.shape) if isinstance(audio, torch.Tensor) else type(audio).__name__
            raise ValueError(f"encode input has shape {shape}; MMAudioVAE encodes mono waveforms [B, samples]")
        least = self._family.least_samples()
        if audio.shape[1] < least:
            raise ValueError(f"encode input has {audio.shape[1]} samples (shape {tuple(audio.shape)}); MMAudioVAE's "
                             f"STFT front end needs at least {least}")
        view = audio[:, None]  # [B, 1, samples]: the family's rank 3
        validation.check_video(view, name="encode input", channels=1, role="encoder", rank=3, dtype=self.dtype)
        posterior = self.posterior_class(self._compute(self._family.encode, view))
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator=None):
        """Encode then decode (the posterior's mode, or a draw with `generator`), as diffusers' forward."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        mel = self.decode(z).sample
        return DecoderOutput(sample=mel) if return_dict else (mel,)

    __call__ = forward

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "enable_slicing", "disable_slicing", "disable_tiling",
                       "use_tiling")


class Vocoder(VocoderFamily):
    """diffusers' `MMAudioVocoder`: its whole forward, one program per mel length (the module docstring)."""

    model_class = MMAudioVocoder  # [B, num_mels, frames] in, [B, 1, samples] out

    def lower(self, vae):
        return self.lowering_on(MMAudioLowered, vae, (), 1, rank=3)

    latent_channels = config_value("num_mels")


class MMAudioVocoderModel(VocoderFacade, TorchaxVAE):
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

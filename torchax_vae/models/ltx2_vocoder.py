"""LTX-2's vocoders: diffusers' LTX2Vocoder (LTX-2) and LTX2VocoderWithBWE (LTX-2.3), the pipelines' `vocoder`.

How diffusers runs them, and how this adapter does: stage 3 of LTX2Pipeline is
`vae.decode`, then `audio_vae.decode` (models/ltx2_audio.py: a stereo log-mel
spectrogram [B, 2, T, mel_bins]), then `vocoder(spectrogram)`, the waveform
[B, 2, samples] at `config.output_sampling_rate`. A vocoder has no encoder,
no decoder and no cache: its forward is one call, a 1-D convolution stack over
the spectrogram's frames (channels and mel bins flattened together: the
config's `in_channels` is their product) that upsamples them to samples.
LTX2VocoderWithBWE runs a second such stack (the bandwidth extension) on the
log-mel spectrogram of the first one's waveform, computed inside (a causal
STFT as convolutions with fixed bases), and adds a resampled skip.

Here the forward is one program of (weights, spectrogram), compiled once per
spectrogram shape (and `time_last`): the whole of diffusers' forward, traced.
The facade (`TorchaxVAE(pipe.vocoder)`) is called as diffusers' module is,
`vocoder(hidden_states, time_last=False)`, and lacks what a vocoder lacks
(`encode`, `decode`, tiling, slicing).
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.ltx2_vocoder", "LTX2VocoderModel"] entry by
# looking the base class up in this module.
from diffusers import ModelMixin  # noqa: F401
from diffusers.pipelines.ltx2.vocoder import LTX2Vocoder

try:  # LTX-2.3's, in a newer diffusers than LTX2Vocoder
    from diffusers.pipelines.ltx2.vocoder import LTX2VocoderWithBWE
except ImportError:
    LTX2VocoderWithBWE = None

from torchax_vae.engine import validation
from torchax_vae.facade.family import Family
from torchax_vae.engine.lowering import Lowered
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.vocoders import VocoderFacade

__all__ = ["LTX2VocoderModel", "LTX2VocoderWithBWEModel", "Vocoder", "VocoderWithBWE"]


class VocoderLowered(Lowered):
    """A vocoder's forward, pure in JAX arrays."""

    def forward_step(self, weights, spectrogram, **options):
        """The module's forward on a spectrogram; options: its Python arguments (LTX2Vocoder's `time_last`)."""
        dtype = spectrogram.dtype
        weights, spectrogram = self.env.j2t_iso((weights, spectrogram))
        flat = {(child if not name else f"{child}.{name}"): value
                for child, tensors in weights.items() for name, value in tensors.items()}
        with self._tracing(dtype, spectrogram.shape, 1):
            out = torch.func.functional_call(self.model, flat, (spectrogram,), options)
        return self.env.t2j_iso(out)


class Vocoder(Family):
    """diffusers' `LTX2Vocoder`, as diffusers runs it (the module docstring)."""

    model_class = LTX2Vocoder
    rank = 4  # what it takes: [B, C, T, mel_bins]; it returns [B, C, samples]
    pipeline_layout = "BCHW"
    decoded_layout = "BCT"
    marked = ()

    def lower(self, vae):
        return self.lowering_on(VocoderLowered, vae, self.marked, 1, rank=4)

    @property
    def video_channels(self) -> int:
        raise AttributeError("a vocoder encodes nothing")

    @property
    def latent_channels(self) -> int:
        return self.config.in_channels  # channels x mel bins: what the first convolution takes

    @property
    def spatial_compression_ratio(self) -> int:
        return 1

    @property
    def sampling_rate(self) -> int:
        """The waveform's samples per second."""
        return self.config.output_sampling_rate

    def check_spectrogram(self, shape, time_last: bool, name: str) -> None:
        """ValueError unless `shape` is [B, C, T, M] (time_last: [B, C, M, T]) with C x M the vocoder's in_channels."""
        axes = "[B, C, mel_bins, T]" if time_last else "[B, C, T, mel_bins]"
        if len(shape) != 4:
            raise ValueError(f"{name} must be a spectrogram {axes} (4-D), got shape {tuple(shape)}")
        mels = shape[2] if time_last else shape[3]
        if shape[1] * mels != self.config.in_channels:
            raise ValueError(f"{name} of shape {tuple(shape)} has {shape[1]} channels x {mels} mel bins = "
                             f"{shape[1] * mels} features; this {self.model_class.__name__} takes "
                             f"{self.config.in_channels} (its in_channels), as {axes}")
        if not all(shape):
            raise ValueError(f"{name} of shape {tuple(shape)} is empty")

    def decode(self, source, tiled: bool | None = None, **options) -> jax.Array:
        """The waveform of the source's spectrograms: one program of the whole forward (options: its arguments,
        part of the program's name)."""
        name = "vocoder" + "".join(f"+{key}={value}" for key, value in sorted(options.items()))
        return self.engine.run_batch(name, functools.partial(self.lowered.forward_step, **options),
                                       self.engine.weights, source.take())

    def encode(self, source, tiled: bool | None = None, **options):
        raise AttributeError("a vocoder encodes nothing")

    def scale_latents(self, latents):
        return latents

    def unscale_latents(self, latents):
        return latents


class LTX2VocoderModel(VocoderFacade, TorchaxVAE):
    """`TorchaxVAE` for diffusers' `LTX2Vocoder`: called as diffusers' module is (the module docstring)."""

    family = Vocoder

    def forward(self, hidden_states: torch.Tensor, time_last: bool = False) -> torch.Tensor:
        """The waveform [B, out_channels, samples] of a spectrogram [B, C, T, mel_bins] ([B, C, mel_bins, T] with
        `time_last`), as diffusers' vocoder computes it."""
        # (time_last only where set: the default is the program `precompile` and `plan` compile, "vocoder")
        return self._vocode(hidden_states, **({"time_last": True} if time_last else {}))

    def _vocode(self, spectrogram: torch.Tensor, **options) -> torch.Tensor:
        time_last = options.get("time_last", False)
        if not isinstance(spectrogram, torch.Tensor):
            raise TypeError(f"the vocoder's input must be a torch.Tensor, got {type(spectrogram).__name__}")
        self._family.check_spectrogram(tuple(spectrogram.shape), time_last, "vocoder input")
        validation.check_video(spectrogram, name="vocoder input", channels=spectrogram.shape[1], role="vocoder",
                               rank=4, dtype=self.dtype)
        return self._compute(functools.partial(self._family.decode, **options), spectrogram)

    __call__ = forward

    def _shape_source(self, kind: str, shape):
        """A decode (the vocoder's call: what `plan` and `precompile` take) of a spectrogram [B, C, T, mel_bins],
        checked as `forward` checks one; a vocoder encodes nothing."""
        if kind != "decode":
            return super()._shape_source(kind, shape)
        shape = tuple(int(n) for n in shape)
        self._family.check_spectrogram(shape, False, "decode shape")
        return self._engine.shapes(shape)

    @property
    def sampling_rate(self) -> int:
        """The waveform's samples per second (`config.output_sampling_rate`)."""
        return self._family.sampling_rate


if LTX2VocoderWithBWE is not None:
    class VocoderWithBWE(Vocoder):
        """diffusers' `LTX2VocoderWithBWE` (LTX-2.3): the vocoder, then its bandwidth extension, in one program."""

        model_class = LTX2VocoderWithBWE

    class LTX2VocoderWithBWEModel(LTX2VocoderModel):
        """`TorchaxVAE` for diffusers' `LTX2VocoderWithBWE` (LTX-2.3)."""

        family = VocoderWithBWE

        def forward(self, mel_spec: torch.Tensor) -> torch.Tensor:
            """The 48 kHz (`output_sampling_rate`) waveform of a spectrogram [B, C, T, mel_bins], as diffusers'."""
            return self._vocode(mel_spec)

        __call__ = forward

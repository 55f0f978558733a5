"""Stable Audio's VAE: diffusers' AutoencoderOobleck (Stable Audio Open's and ACE-Step's `vae`).

How diffusers runs it, and how this adapter does:

- Waveforms [B, audio_channels, samples] (stereo, 44.1 kHz released); latents
  [B, decoder_input_channels, L]. The encoder is weight-normalized 1-D
  convolutions with Snake activations, each block downsampling by its
  `downsampling_ratios` entry (kernel 2s, stride s, padding ceil(s / 2)); the
  decoder mirrors it with transposed convolutions. One program per input
  length each way.
- The encoder's output is the posterior's parameters, mean and scale on
  channels; the posterior is diffusers' own
  `OobleckDiagonalGaussianDistribution` (std = softplus(scale) + 1e-4).
- Slicing as diffusers' (one batch element per call).
- Tiling along time, as diffusers' `_tiled_encode` / `_tiled_decode` (not
  bit-identical to an untiled call, as diffusers says): a waveform longer than
  `tile_sample_min_length` samples (30 s) is encoded in windows of that many
  with `tile_sample_overlap` (2 s) more each side, each window's latents
  trimmed back to its core and joined; latents longer than
  `tile_latent_min_length` (512) decode the same way with
  `tile_latent_overlap` (64). One program per window length (the first, the
  middle ones and the last). `enable_tiling()` turns it on, as diffusers';
  off, it is "auto" (tile only what would not fit), as every family.
"""

import math

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.oobleck", "OobleckVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderOobleck, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_oobleck import (
    AutoencoderOobleckOutput,
    OobleckDecoderOutput,
    OobleckDiagonalGaussianDistribution,
)

from torchax_vae.engine import memory
from torchax_vae.facade.family import Family, config_value
from torchax_vae.engine.lowering import OneChildLowered
from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import tiling_switch

__all__ = ["Oobleck", "OobleckVAE", "latent_length"]


def latent_length(config, samples: int) -> int:
    """Latent frames of `samples` samples: each encoder block's strided convolution (kernel 2s, stride s, padding
    ceil(s / 2)) in turn."""
    for stride in config.downsampling_ratios:
        samples = (samples + 2 * math.ceil(stride / 2) - 2 * stride) // stride + 1
    return samples


def sample_length(config, latents: int) -> int:
    """Samples decoded from `latents` latent frames: each decoder block's transposed convolution in turn."""
    for stride in config.downsampling_ratios[::-1]:
        latents = (latents - 1) * stride - 2 * math.ceil(stride / 2) + 2 * stride
    return latents


def windows(length: int, chunk: int, overlap: int):
    """diffusers' time tiles of a `length` axis: (window start, window end, core start, core end) each."""
    stride = chunk - 2 * overlap
    if stride <= 0:
        raise ValueError(f"the tile length ({chunk}) must be greater than 2 x its overlap ({overlap})")
    for i in range(math.ceil(length / stride)):
        core_start, core_end = i * stride, min(i * stride + stride, length)
        yield max(0, core_start - overlap), min(length, core_end + overlap), core_start, core_end


class Oobleck(Family):
    """diffusers' `AutoencoderOobleck`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderOobleck
    rank = 3
    pipeline_layout = decoded_layout = "BCT"
    posterior_class = OobleckDiagonalGaussianDistribution
    settings = ("tile_sample_min_length", "tile_sample_overlap", "tile_latent_min_length", "tile_latent_overlap")
    # (diffusers before 0.42 has no tiling for this class: never tiled there)
    tile_sample_min_length = tile_sample_overlap = tile_latent_min_length = tile_latent_overlap = None

    def lower(self, vae):
        return self.lowering_on(OneChildLowered, vae, (), 1, rank=3)

    video_channels = config_value("audio_channels")

    latent_channels = config_value("decoder_input_channels")

    @property
    def spatial_compression_ratio(self) -> int:
        return math.prod(self.config.downsampling_ratios)  # diffusers' hop_length: samples per latent

    sampling_rate = config_value("sampling_rate")

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, samples = video_shape
        return (batch, self.latent_channels, latent_length(self.config, samples))

    def decoded_samples(self, latents: int) -> int:
        """Samples per channel that `latents` latent frames decode to (untiled, as tiles join to the same)."""
        return sample_length(self.config, latents)

    def check_video(self, shape, name: str) -> None:
        if latent_length(self.config, shape[2]) < 1:
            least = next(n for n in range(1, 1 << 20) if latent_length(self.config, n) >= 1)
            raise ValueError(f"{name} has {shape[2]} samples (shape {tuple(shape)}); AutoencoderOobleck encodes at "
                             f"least {least} (its downsampling ratios {list(self.config.downsampling_ratios)})")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # Stable Audio's pipeline hands the posterior's latents over as they are

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents

    # ----- encode / decode -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("encode", source, tiled)

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("decode", source, tiled)

    def _run(self, kind: str, source, tiled) -> jax.Array:
        """The whole call, or diffusers' time tiles of it where tiling is on (or `tiled`) and the input is longer
        than a tile."""
        length = source.shape[2]
        chunk, overlap = ((self.tile_sample_min_length, self.tile_sample_overlap) if kind == "encode" else
                          (self.tile_latent_min_length, self.tile_latent_overlap))
        if chunk is None:
            tiled = False
        elif tiled is None:
            tiled = length > chunk and self.engine.should_tile(
                "encoder" if kind == "encode" else "decoder", lambda: self._untiled_bytes(kind, source), source.shape,
                (chunk,))
        if not tiled or chunk is None or length <= chunk:  # diffusers tiles only what is longer than a tile
            out = self._call(kind, source.take())
            self.engine.ran_batch(out)
            return out
        pieces, scale = [], None
        for start, end, core_start, core_end in windows(length, chunk, overlap):
            tile = self._call(kind, source.take((start, end)))
            self.engine.ran_batch(tile)
            # diffusers' trims, from the first tile's ratio of output to input length
            scale = scale or ((end - start) / tile.shape[-1] if kind == "encode" else tile.shape[-1] / (end - start))
            left = (core_start - start) / scale if kind == "encode" else (core_start - start) * scale
            right = (end - core_end) / scale if kind == "encode" else (end - core_end) * scale
            left, right = int(round(left)), int(round(right))
            pieces.append(apply(_trim, tile, left=left, stop=tile.shape[-1] - right if right > 0 else tile.shape[-1]))
        return apply(_join, pieces)

    def _call(self, kind: str, x):
        encode = kind == "encode"
        child = "encoder" if encode else "decoder"
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        return self.engine.programs.run(child, step, {child: self.engine.weights[child]}, x)

    def _untiled_bytes(self, kind: str, source) -> int:
        with self.engine.programs.recording() as used:
            self._call(kind, self.engine.shapes(source.shape).take())
        return memory.call_bytes(used)


def _trim(tile, *, left: int, stop: int):
    return tile[:, :, left:stop]


def _join(pieces):
    return jax.numpy.concatenate(pieces, axis=-1)


class OobleckVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderOobleck` (the module docstring)."""

    family = Oobleck

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        # diffusers' attributes of the instance
        self.hop_length, self.sampling_rate = vae.hop_length, vae.sampling_rate
        self.encoder_hidden_size, self.decoder_channels = vae.encoder_hidden_size, vae.decoder_channels
        self.downsampling_ratios, self.upsampling_ratios = vae.downsampling_ratios, vae.upsampling_ratios

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes waveforms [B, audio_channels, samples] into diffusers' `OobleckDiagonalGaussianDistribution`."""
        posterior = self._posterior(x)
        return AutoencoderOobleckOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, z: torch.Tensor, return_dict: bool = True, generator=None):
        """Decodes latents [B, C, L] into waveforms [B, audio_channels, samples], as diffusers does (its `generator`
        is accepted and unused, as there)."""
        sample = TorchaxVAE.decode(self, z, return_dict=False)[0]
        return OobleckDecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True,
                generator=None):
        """Encode then decode, as diffusers' (its output class)."""
        dec = TorchaxVAE.forward(self, sample, sample_posterior, return_dict=False, generator=generator)[0]
        return OobleckDecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    enable_tiling = tiling_switch()

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode")

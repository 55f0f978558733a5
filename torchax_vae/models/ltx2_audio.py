"""LTX-2's audio VAE: diffusers' AutoencoderKLLTX2Audio (LTX2Pipeline's `audio_vae`, and its modular and echo pipelines).

How diffusers runs it, and how this adapter does:

- Its input is a stereo log-mel spectrogram [B, 2, T, mel_bins], a 2-D
  "image" of time by mel bins; its latents are [B, latent_channels, L,
  mel_bins / 4]. `encode` is one encoder call on the whole batch, `decode`
  one decoder call (no quant convolutions, no tiling: diffusers has none for
  this class), as AutoencoderKL's images (models/kl.py): one program per
  input shape each way, slicing (`enable_slicing()`) one clip at a time.
- Time is causal (`causality_axis="height"` in the released config): each
  downsampling keeps (n - 1) // 2 + 1 frames, so L = (T - 1) // 4 + 1, and the
  decoder makes 4 L - 3 spectrogram frames, cut (or zero-padded) to that and to
  the config's `mel_bins`, all inside the traced forward.
- diffusers' attributes `temporal_compression_ratio` and
  `mel_compression_ratio` are 4 whatever the config (its constant); the
  pipeline reads them to size the latents. They are diffusers' here too; the
  latent shape this adapter computes comes from the blocks.
- `LTX2Pipeline(output_type="latent")` returns the audio latents denormalized
  and unpacked, [B, C, L, M], which `decode` takes: the command and the
  service take them as they are. The pipeline normalizes packed latents
  [B, L, C x M] with the `latents_mean` / `latents_std` buffers (128 values,
  C x M of the released model): `scale_latents` applies that to [B, C, L, M].

The vocoder that turns the decoded spectrogram into a waveform is its own
module, models/ltx2_vocoder.py.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.ltx2_audio", "LTX2AudioVAE"] entry by looking
# the base class up in this module.
from diffusers import AutoencoderKLLTX2Audio, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_ltx2_audio import (
    LTX2AudioDownsample,
    LTX2AudioResnetBlock,
    LTX2AudioUpsample,
)

from torchax_vae.facade.config import LatentStatistics
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import refused
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.family import with_config

__all__ = ["LTX2Audio", "LTX2AudioVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def _halved(n: int, causal: bool) -> int:
    """One LTX2AudioDownsample on an axis of n: a stride-2 convolution of 3 after padding 2 before (the causal
    axis) or 1 after (the other)."""
    return (n - 1) // 2 + 1 if causal else n // 2


def latent_shape(config, audio_shape) -> tuple[int, ...]:
    """[B, latent_channels, L, M] of a spectrogram [B, C, T, mel] under `config`, from the encoder's downsamplings."""
    batch, _, frames, mels = audio_shape
    for _ in range(len(config.ch_mult) - 1):
        frames = _halved(frames, config.causality_axis == "height")
        mels = _halved(mels, config.causality_axis == "width")
    return (batch, config.latent_channels, frames, mels)


class LTX2Audio(KL):
    """diffusers' `AutoencoderKLLTX2Audio`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLLTX2Audio
    marked = (LTX2AudioResnetBlock, LTX2AudioDownsample, LTX2AudioUpsample)
    settings = ()  # no tiling: diffusers' class has none

    @property
    def spatial_compression_ratio(self) -> int:
        """How many spectrogram frames (and mel bins) one latent spans: 2 per downsampling level."""
        return 2 ** (len(self.config.ch_mult) - 1)

    latent_shape = with_config(latent_shape)

    def check_video(self, shape, name: str) -> None:
        """Any spectrogram length and width runs, as in diffusers."""

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return False  # never tiled, as diffusers' class never tiles

    def _statistics(self, latents: torch.Tensor):
        """The buffers as [1, C, 1, M] over unpacked latents [B, C, L, M]: the pipeline normalizes packed ones
        [B, L, C x M], channel-major (`LTX2Pipeline._pack_audio_latents`)."""
        channels, mels = latents.shape[1], latents.shape[3]
        stats = []
        for name in ("latents_mean", "latents_std"):
            values = self.buffer(name)
            if values.numel() != channels * mels:
                raise ValueError(f"this AutoencoderKLLTX2Audio's {name} has {values.numel()} values, for packed latents "
                                 f"of {values.numel()} features; latents [B, {channels}, L, {mels}] pack into "
                                 f"{channels * mels}")
            stats.append(values.view(1, channels, 1, mels).to(latents.device, latents.dtype))
        return stats

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return (latents - mean) / std

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return latents * std + mean

    def normalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents  # LTX2Pipeline returns and takes the VAE's own latents (the module docstring)

    def denormalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents


class LTX2AudioVAE(LatentStatistics, KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLLTX2Audio` (the module docstring)."""

    family = LTX2Audio

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        # diffusers' constants of the instance, which LTX2Pipeline reads (the module docstring)
        self.temporal_compression_ratio = vae.temporal_compression_ratio
        self.mel_compression_ratio = vae.mel_compression_ratio

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, L, M] into spectrograms [B, 2, 4 L - 3, mel_bins], as diffusers does."""
        return TorchaxVAE.decode(self, z, return_dict=return_dict)

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes spectrograms [B, 2, T, mel_bins] into a `DiagonalGaussianDistribution`, as diffusers does."""
        return TorchaxVAE.encode(self, x, return_dict=return_dict)

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "_tiled_encode", "tiled_decode", "unpack_latents", "use_tiling")

    enable_tiling = refused("tiling")

    def disable_tiling(self) -> None:
        """Nothing to disable (diffusers' sets a flag that nothing reads)."""

"""The Cosmos family: diffusers' AutoencoderKLCosmos (CosmosTextToWorldPipeline, CosmosVideoToWorldPipeline).

A whole-clip VAE on the frame-window scheme (torchax_vae/models/windows.py) without the windows: diffusers'
`_encode` and `_decode` run the encoder (then quant_conv) and post_quant_conv (then the decoder) once on the
whole clip, so here each is one program per clip length and resolution. What is Cosmos's own:

- Haar-wavelet patching (`CosmosPatchEmbed3d`: the first frame repeated `patch_size` times, then grouped
  strided convolutions) and its inverse in the decoder, traced as diffusers writes them;
- an identity latent distribution: `encode` returns `IdentityDistribution` (`mode()` and `sample()` are the
  encoder's output; no mean or logvar), as diffusers' class;
- no tiling: diffusers' `enable_tiling` stores its arguments, which its encode and decode never read, so here
  too every call sees the whole clip (`enable_tiling` is accepted and changes nothing);
- the pipelines' latent normalization per channel and latent frame (`latents_mean` and `latents_std` hold
  channels x frames values) by the scheduler's `sigma_data` (0.5 in the released pipelines'
  EDMEulerScheduler): `latents * std / sigma_data + mean` before decoding.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.cosmos", "CosmosVAE"] entry by looking the
# base class up in this module.
from diffusers import AutoencoderKLCosmos, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_cosmos import CosmosCausalConv3d, CosmosCausalGroupNorm
from diffusers.models.autoencoders.vae import IdentityDistribution

from torchax_vae.models.windows import Windows, WindowVAE
from torchax_vae.facade.family import causal_latent_shape, config_value, of_config, with_config

__all__ = ["CosmosVAE", "SIGMA_DATA", "latent_shape", "video_channels"]

SIGMA_DATA = 0.5  # EDMEulerScheduler's sigma_data in the released Cosmos pipelines (the latents' scale)


def video_channels(config) -> int:
    return config.in_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, 1 + kT frames, height, width] video."""
    return causal_latent_shape(video_shape, config.latent_channels, config.temporal_compression_ratio, config.spatial_compression_ratio)


class Cosmos(Windows):
    """diffusers' `AutoencoderKLCosmos`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLCosmos
    posterior_class = IdentityDistribution
    # every convolution (causal: time padded by its first frame) and every norm; not the wavelet (un)patchers,
    # whose grouped convolutions run on the video's own few channels
    marked = (CosmosCausalConv3d, CosmosCausalGroupNorm)
    frame_windows = False
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_min_num_frames",
                "tile_sample_stride_height", "tile_sample_stride_width", "tile_sample_stride_num_frames")

    video_channels = of_config(video_channels)

    spatial_compression_ratio = config_value("spatial_compression_ratio")

    temporal_compression_ratio = config_value("temporal_compression_ratio")

    latent_shape = with_config(latent_shape)

    check_video = Windows._check_clip

    def _normalization(self, latents: torch.Tensor):
        """The pipelines' per-channel, per-latent-frame mean and std, or None where the config has none."""
        mean, std = self.config.latents_mean, self.config.latents_std
        if mean is None:
            return None
        shape = (1, self.config.latent_channels, -1, 1, 1)
        frames = latents.shape[2]
        mean = torch.tensor(mean).view(shape)[:, :, :frames].to(latents)
        std = torch.tensor(std).view(shape)[:, :, :frames].to(latents)
        return mean, std

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As CosmosVideoToWorldPipeline.prepare_latents: (latents - mean) * sigma_data / std."""
        stats = self._normalization(latents)
        if stats is None:
            return latents * SIGMA_DATA
        return (latents - stats[0]) * SIGMA_DATA / stats[1]

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As CosmosTextToWorldPipeline before decoding: latents * std / sigma_data + mean."""
        stats = self._normalization(latents)
        if stats is None:
            return latents / SIGMA_DATA
        return latents * stats[1] / SIGMA_DATA + stats[0]

    def _tile_threshold(self, kind: str) -> tuple[float, float]:
        return (float("inf"), float("inf"))  # diffusers' class never tiles

class CosmosVAE(WindowVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLCosmos` (module docstring)."""

    family = Cosmos

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        raise AttributeError("AutoencoderKLCosmos has no tiled_encode: diffusers' class encodes whole clips only")

    def tiled_decode(self, z: torch.Tensor, return_dict: bool = True):
        raise AttributeError("AutoencoderKLCosmos has no tiled_decode: diffusers' class decodes whole clips only")

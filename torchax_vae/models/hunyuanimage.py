"""HunyuanImage 2.1's image VAE: diffusers' AutoencoderKLHunyuanImage (HunyuanImagePipeline).

How diffusers runs it, and how this adapter does: as AutoencoderKL
(models/kl.py), with this class's own blocks (32x compression, 64 latent
channels; down- and upsampling by reshaping 2x2 pixels to channels and back,
so images come in multiples of the compression) and no quant convolutions.
One encoder or decoder program per image shape; slicing; tiles of
`tile_sample_min_size` every (1 - `tile_overlap_factor`) of it, blended over
the overlap, with `enable_tiling(tile_sample_min_size, tile_overlap_factor)`
as diffusers'. The mid block's attention is one head over every latent
position without a heads axis ([B, tokens, C]); long ones run in query blocks
as AutoencoderKL's (torchax_vae/patches/attention_blocks.py, through attention_split).

One difference from diffusers, where diffusers fails: its `tiled_encode`
unpacks a 5-D shape from the 4-D images it is given (diffusers 0.42.1), so a
tiled encode raises there. Here it tiles the images with the arithmetic of
its `tiled_decode` (tests/test_hunyuanimage.py checks it against diffusers' own
loop run on a 5-D view). docs/limits.md has the line.
"""

import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.hunyuanimage", "HunyuanImageVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderKLHunyuanImage, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_hunyuanimage import (
    HunyuanImageAttentionBlock,
    HunyuanImageDownsample,
    HunyuanImageResnetBlock,
    HunyuanImageUpsample,
)

from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.family import config_value, with_config

__all__ = ["HunyuanImage", "HunyuanImageVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def latent_shape(config, image_shape) -> tuple[int, ...]:
    """[B, latent_channels, H / ratio, W / ratio] of [B, C, H, W] images (sizes are multiples of the ratio)."""
    batch, _, height, width = image_shape
    ratio = config.spatial_compression_ratio
    return (batch, config.latent_channels, height // ratio, width // ratio)


class HunyuanImage(KL):
    """diffusers' `AutoencoderKLHunyuanImage`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLHunyuanImage
    marked = (HunyuanImageResnetBlock, HunyuanImageAttentionBlock, HunyuanImageDownsample, HunyuanImageUpsample,
              TorchaxGroupNorm)
    _multiples_because = "each downsampling folds 2x2 pixels into channels"

    spatial_compression_ratio = config_value("spatial_compression_ratio")

    latent_shape = with_config(latent_shape)


class HunyuanImageVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLHunyuanImage` (the module docstring)."""

    family = HunyuanImage

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, H, W] into images, as diffusers does."""
        return TorchaxVAE.decode(self, z, return_dict=return_dict)

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """This class's `tiled_encode`: the posterior's parameters (moments) of `x`, tiled whatever its size (diffusers'
        own raises on 4-D images: the module docstring)."""
        return TorchaxVAE.tiled_encode(self, x)

    def _tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        raise AttributeError("AutoencoderKLHunyuanImage has no _tiled_encode: use tiled_encode")

    def enable_tiling(self, tile_sample_min_size: int | None = None, tile_overlap_factor: float | None = None) -> None:
        """Tile every image larger than a tile, with these settings (the current ones where None), as diffusers'."""
        self.tiling_mode = "on"
        self.tile_sample_min_size = tile_sample_min_size or self.tile_sample_min_size
        self.tile_overlap_factor = tile_overlap_factor or self.tile_overlap_factor
        self.tile_latent_min_size = self.tile_sample_min_size // self.spatial_compression_ratio

"""Sana's image VAE: diffusers' AutoencoderDC (DC-AE; SanaPipeline, SanaSprint, Sana PAG and ControlNet).

How diffusers runs it, and how this adapter does:

- Images [B, C, H, W] compressed 32x (2 ** (blocks - 1)), latents with no
  posterior: `encode` returns `EncoderOutput(latent=...)`, the encoder's output
  itself. Each of `encode` and `decode` is one encoder or decoder program on the
  batch per input shape (`KLVAE`'s calls, models/kl.py). Its attention is
  linear (ReLU kernels, `SanaMultiscaleLinearAttention`): no score matrix at
  any size.
- Tiling (`enable_tiling(tile_sample_min_height, ..., tile_sample_stride_width)`):
  tiles of `tile_sample_min_*` every `tile_sample_stride_*`; each output tile
  blended with its upper and left neighbours over (tile - stride) and keeping a
  stride, as diffusers' `tiled_encode` / `tiled_decode`. An edge tile's input
  is padded with zeros to a multiple of the compression when encoding, as
  diffusers pads it, and the latents are cut to the image's. Edge tiles run at
  their own shape, as diffusers runs them: with the default 512 every 448 at
  most two sizes per axis, so four tile programs each way for any image size
  (a stride under half the tile leaves more short tiles at each edge).
- Slicing: one image at a time. Latents as SanaPipeline scales them:
  `z * scaling_factor`, and `z / scaling_factor` before decoding.
"""

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.dc", "DCVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderDC, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_dc import DCDownBlock2d, DCUpBlock2d, EfficientViTBlock, ResBlock
from diffusers.models.autoencoders.vae import DecoderOutput, EncoderOutput, IdentityDistribution

from torchax_vae.placement import tiling
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.policy import tiling_switch
from torchax_vae.facade.family import of_config, with_config

__all__ = ["DC", "DCVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def spatial_ratio(config) -> int:
    return 2 ** (len(config.encoder_block_out_channels) - 1)


def latent_shape(config, image_shape) -> tuple[int, ...]:
    """[B, latent_channels, H / ratio, W / ratio] of [B, C, H, W] images (sizes are multiples of the ratio)."""
    batch, _, height, width = image_shape
    ratio = spatial_ratio(config)
    return (batch, config.latent_channels, height // ratio, width // ratio)


class DC(KL):
    """diffusers' `AutoencoderDC`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderDC
    # the encoder's output is the latents: no distribution (what the command and the service sample from)
    posterior_class = IdentityDistribution
    marked = (ResBlock, EfficientViTBlock, DCDownBlock2d, DCUpBlock2d)
    _multiples_because = "its shortcuts unshuffle pixels 2x2 at every block"
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height",
                "tile_sample_stride_width")

    # ----- what the family says -----

    spatial_compression_ratio = of_config(spatial_ratio)

    @property
    def tile_latent_min_height(self) -> int:
        return self.tile_sample_min_height // self.spatial_compression_ratio

    @property
    def tile_latent_min_width(self) -> int:
        return self.tile_sample_min_width // self.spatial_compression_ratio

    latent_shape = with_config(latent_shape)

    # ----- tiles: diffusers' strided arithmetic -----

    def _tile_sizes(self, kind: str) -> tuple[int, int]:
        if kind == "encode":
            return self.tile_sample_min_height, self.tile_sample_min_width
        return self.tile_latent_min_height, self.tile_latent_min_width

    def _tile_layout(self, kind: str) -> tiling.TileLayout:
        ratio = self.spatial_compression_ratio
        sample = (self.tile_sample_min_height, self.tile_sample_min_width)
        stride = (self.tile_sample_stride_height, self.tile_sample_stride_width)
        if kind == "encode":
            return tiling.strided(*sample, *stride, out_scale=ratio)
        latent = (sample[0] // ratio, sample[1] // ratio)
        return tiling.strided(*latent, stride[0] // ratio, stride[1] // ratio, out_scale=1, out_tile=sample,
                              out_stride=stride)

    def _call(self, kind: str, source, block=None) -> jax.Array:
        """One encoder or decoder program on the source, or on a block of it ((row, col, height, width)); an
        encoder's block zero-padded to a multiple of the compression, as diffusers pads it (`take` pads)."""
        encode = kind == "encode"
        if encode and block is not None:
            ratio = self.spatial_compression_ratio
            block = (*block[:2], *(-(-size // ratio) * ratio for size in block[2:]))
        images = source.take() if block is None else source.take(None, block[::2], block[1::2])
        child = "encoder" if encode else "decoder"
        name = child + ("" if block is None else "/tile")
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        return self.engine.programs.run(name, step, {child: self.engine.weights[child]}, images)

    def _tiled(self, kind: str, source) -> jax.Array:
        out = super()._tiled(kind, source)
        if kind != "encode":
            return out
        ratio = self.spatial_compression_ratio
        return out[..., : source.shape[-2] // ratio, : source.shape[-1] // ratio]


class DCVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderDC`, as diffusers runs it (the module docstring)."""

    family = DC

    @property
    def tile_latent_min_height(self) -> int:
        return self._family.tile_latent_min_height

    @property
    def tile_latent_min_width(self) -> int:
        return self._family.tile_latent_min_width

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes images [B, C, H, W] into latents, `EncoderOutput(latent=...)` as diffusers (no posterior)."""
        latent = self._posterior(x).mode()
        return EncoderOutput(latent=latent) if return_dict else (latent,)

    def tiled_encode(self, x: torch.Tensor, return_dict: bool = True):
        """diffusers' `tiled_encode`: the latents of `x`, encoded in tiles whatever its size."""
        latent = self._encode_with(x, "tiled_encode", tiled=True)
        return EncoderOutput(latent=latent) if return_dict else (latent,)

    def _tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        raise AttributeError("AutoencoderDC has no _tiled_encode: use tiled_encode")

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, H, W] into images, as diffusers does."""
        return super().decode(z, return_dict=return_dict)

    def forward(self, sample: torch.Tensor, return_dict: bool = True):
        """Encode then decode, as diffusers' `AutoencoderDC.forward`."""
        decoded = self.decode(self.encode(sample, return_dict=False)[0]).sample
        return DecoderOutput(sample=decoded) if return_dict else (decoded,)

    __call__ = forward

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height", "tile_sample_stride_width")

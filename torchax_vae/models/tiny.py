"""TAESD, the tiny VAE pipelines swap in for previews: diffusers' AutoencoderTiny (TAESD, TAESDXL, TAESD3, TAEF1).

How diffusers runs it, and how this adapter does:

- Images [B, C, H, W]; the encoder's output is the latents (no posterior):
  `encode` returns `AutoencoderTinyOutput(latents=...)`, `decode(x, generator,
  return_dict)` the images. One encoder or decoder program per input shape.
- Tiling (`enable_tiling()`; `tile_sample_min_size`, `tile_latent_min_size`,
  `tile_overlap_factor` as the instance has them): diffusers' own scheme,
  not AutoencoderKL's. Tiles start every tile x (1 - overlap); each tile's
  output is written over the output so far through a mask that ramps from 0
  to 1 over the blend width at its upper and left edges (1 for the first row
  and column), in diffusers' order. Edge tiles run at their own shape; the
  masked writes are one program (`assemble`). Tiling applies to every input,
  as in diffusers (an input within one tile is one tile).
- `scale_latents` / `unscale_latents` are diffusers' own here: raw latents to
  [0, 1] and back, as TAESD stores latents in an image (`forward` round-trips
  them through uint8 as diffusers does). The pipelines' normalization, which
  the command and the service apply, is `normalize_latents` /
  `denormalize_latents`: `(z - shift_factor) * scaling_factor` from the config.

Where diffusers' tiling fails, this tiles: diffusers' tiled encode allocates 4
output channels and its tiled decode 3 whatever the model has (TAESD3 and
TAEF1 have 16 latent channels; docs/limits.md).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.tiny", "TinyVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderTiny, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_tiny import AutoencoderTinyOutput
from diffusers.models.autoencoders.vae import DecoderOutput, IdentityDistribution
from diffusers.models.unets.unet_2d_blocks import AutoencoderTinyBlock

from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.kl import KL, KLVAE
from torchax_vae.facade.family import with_config

__all__ = ["Tiny", "TinyVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def _downsamplings(config) -> int:
    return len(config.encoder_block_out_channels) - 1  # every encoder block but the first convolves with stride 2


def latent_shape(config, image_shape) -> tuple[int, ...]:
    """[B, latent_channels, h, w] of [B, C, H, W] images: each stride-2 convolution (padding 1) rounds up."""
    batch, _, height, width = image_shape
    for _ in range(_downsamplings(config)):
        height, width = -(-height // 2), -(-width // 2)
    return (batch, config.latent_channels, height, width)


def blend_mask(tile: float, blend: float) -> np.ndarray:
    """diffusers' ramp `torch.arange(tile) / (blend - 1)` clamped to [0, 1], in float32 as torch computes it."""
    return np.clip(np.arange(tile, dtype=np.float32) / np.float32(blend - 1), 0, 1)


@functools.partial(jax.jit, static_argnames=("starts", "size", "ramp_rows", "ramp_cols"))
def assemble(tiles, *, starts, size, ramp_rows, ramp_cols):
    """diffusers' masked tile writes: for each tile in order, out[region] = mask x tile + (1 - mask) x out[region],
    where the mask ramps over the upper edge (tiles after the first row) times the left edge (after the first column).

    starts[k]: tile k's (row, col) in the output; size: the output's (height, width); ramp_*: the mask ramp.
    """
    first = tiles[0]
    out = jnp.zeros(first.shape[:-2] + tuple(size), jnp.float32)
    for tile, (row, col) in zip(tiles, starts):
        height, width = min(tile.shape[-2], size[0] - row), min(tile.shape[-1], size[1] - col)
        mask_rows = np.ones(height, np.float32) if row == 0 else np.asarray(ramp_rows, np.float32)[:height]
        mask_cols = np.ones(width, np.float32) if col == 0 else np.asarray(ramp_cols, np.float32)[:width]
        mask = jnp.asarray(mask_rows[:, None] * mask_cols[None, :])
        region = jax.lax.dynamic_slice_in_dim(jax.lax.dynamic_slice_in_dim(out, row, height, -2), col, width, -1)
        written = mask * tile[..., :height, :width].astype(jnp.float32) + (1 - mask) * region
        out = jax.lax.dynamic_update_slice(out, written, (0,) * (out.ndim - 2) + (row, col))
    return out.astype(first.dtype)


class Tiny(KL):
    """diffusers' `AutoencoderTiny`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderTiny
    marked = (AutoencoderTinyBlock,)
    posterior_class = IdentityDistribution  # the encoder's output is the latents

    # ----- what the family says -----

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** _downsamplings(self.config)

    latent_shape = with_config(latent_shape)

    def normalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """The latents as the pipelines that swap TAESD in scale them: `(z - shift_factor) * scaling_factor`."""
        return (latents - self.config.shift_factor) * self.config.scaling_factor

    def denormalize_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As those pipelines before `decode`: `z / scaling_factor + shift_factor`."""
        return latents / self.config.scaling_factor + self.config.shift_factor

    def scale_latents(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' AutoencoderTiny.scale_latents: raw latents -> [0, 1]."""
        return x.div(2 * self.config.latent_magnitude).add(self.config.latent_shift).clamp(0, 1)

    def unscale_latents(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' AutoencoderTiny.unscale_latents: [0, 1] -> raw latents."""
        return x.sub(self.config.latent_shift).mul(2 * self.config.latent_magnitude)

    # ----- tiles: diffusers' masked writes -----

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        return True  # diffusers tiles every input when tiling is on, one tile or more

    def _tiled(self, kind: str, source) -> jax.Array:
        """diffusers' `_tiled_encode` / `_tiled_decode`: tiles every (tile - blend), written through the masks."""
        encode = kind == "encode"
        ratio = self.spatial_compression_ratio  # diffusers' spatial_scale_factor, 2 ** out_channels: 8, as here
        tile = self.tile_sample_min_size if encode else self.tile_latent_min_size
        blend = int(tile * self.tile_overlap_factor)
        traverse = tile - blend
        height, width = source.shape[-2:]
        outputs, starts = [], []
        for i in range(0, height, traverse):
            for j in range(0, width, traverse):
                block = (i, j, min(tile, height - i), min(tile, width - j))
                out = self._call(kind, source, block)
                self.engine.ran_batch(out)
                outputs.append(out)
                starts.append((i // ratio, j // ratio) if encode else (i * ratio, j * ratio))
        if encode:  # diffusers' output size, and its ramp over the output tile
            size, ramp = (height // ratio, width // ratio), blend_mask(tile / ratio, blend / ratio)
        else:
            size, ramp = (height * ratio, width * ratio), blend_mask(tile * ratio, blend * ratio)
        ramp = tuple(float(v) for v in ramp)
        return apply(assemble, outputs, starts=tuple(starts), size=size, ramp_rows=ramp, ramp_cols=ramp)


class TinyVAE(KLVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderTiny`, as diffusers runs it (the module docstring)."""

    family = Tiny

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes images [B, C, H, W] into latents, `AutoencoderTinyOutput(latents=...)` as diffusers."""
        latents = self._posterior(x).mode()
        return AutoencoderTinyOutput(latents=latents) if return_dict else (latents,)

    def decode(self, x: torch.Tensor, generator=None, return_dict: bool = True):
        """Decodes latents [B, C, H, W] into images; `generator` is accepted and unused, as in diffusers."""
        return TorchaxVAE.decode(self, x, return_dict=return_dict)

    def forward(self, sample: torch.Tensor, return_dict: bool = True):
        """diffusers' forward: encode, latents through uint8 as if stored in an image, decode."""
        latents = self.encode(sample).latents
        stored = self.scale_latents(latents).mul_(255).round_().byte()
        decoded = self.decode(self.unscale_latents(stored / 255.0)).sample
        return DecoderOutput(sample=decoded) if return_dict else (decoded,)

    __call__ = forward

    def tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        raise AttributeError("AutoencoderTiny has no tiled_encode: enable_tiling(), then encode")

    def _tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `_tiled_encode`: the latents of `x` in tiles, whatever its size."""
        return TorchaxVAE.tiled_encode(self, x)

    def tiled_decode(self, z: torch.Tensor, return_dict: bool = True):
        raise AttributeError("AutoencoderTiny has no tiled_decode: enable_tiling(), then decode")

    def _tiled_decode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `_tiled_decode`: `x` decoded in tiles, whatever its size."""
        return TorchaxVAE.tiled_decode(self, x).sample

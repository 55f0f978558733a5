"""The image VAE of most diffusers pipelines: diffusers' AutoencoderKL (SD 1.x/2.x, SDXL, SD3/3.5, Flux.1, ...).

How diffusers runs it, and how this adapter does:

- Images [B, C, H, W], no frames and no cache: `encode` is one encoder call
  (then `quant_conv`, where the model has one) on the whole batch, `decode`
  one `post_quant_conv` + decoder call. Here each is one program of (weights,
  images), compiled once per input shape.
- Tiling (`enable_tiling()`; `tile_sample_min_size`, `tile_latent_min_size` and
  `tile_overlap_factor` as the instance has them): tiles of the minimum size
  start every (1 - overlap) of it; each tile's output is blended with its upper
  and left neighbours over `overlap` of the output tile and keeps the rest, as
  diffusers' `_tiled_encode` / `tiled_decode` (`blend_v`, `blend_h`). Edge
  tiles run at their own shape (the mid block's attention sees the whole
  tile), so a size compiles at most four tile programs each way. "auto" tiles
  only what would not fit untiled (`memory.call_bytes`, the one rule of every
  family).
- Slicing (`enable_slicing()`): one image at a time, as diffusers.
- Latent normalization, as the pipelines apply it: `(z - shift_factor) *
  scaling_factor` (SD3 and Flux have a shift, SD and SDXL none); where the
  config has `latents_mean` / `latents_std` (SDXL variants), those, as
  StableDiffusionXLPipeline does before decoding.
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.kl", "KLVAE"] entry by looking the base
# class up in this module.
from diffusers import AutoencoderKL, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKLOutput
from diffusers.models.resnet import Downsample2D, ResnetBlock2D, Upsample2D

from torchax_vae.engine import memory, validation
from torchax_vae.placement import tiling
from torchax_vae.facade.family import Family, of_config, with_config
from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE, where_diffusers_has
from torchax_vae.facade.policy import tiling_switch
from torchax_vae.models.windows import WindowLowered

__all__ = ["KL", "KLVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def spatial_ratio(config) -> int:
    return 2 ** (len(config.block_out_channels) - 1)


def latent_shape(config, image_shape) -> tuple[int, ...]:
    """[B, latent_channels, H, W] of the latents of [B, C, height, width] images (each Downsample2D halves,
    rounding down)."""
    batch, _, height, width = image_shape
    ratio = spatial_ratio(config)
    return (batch, config.latent_channels, height // ratio, width // ratio)


_where_diffusers_has = where_diffusers_has  # (its older name, which the family modules import)


class KL(Family):
    """diffusers' `AutoencoderKL`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKL
    rank = 4
    pipeline_layout = "BCHW"
    decoded_layout = "BCHW"
    # the layers whose activations get sharding marks on a mesh (torchax_vae/patches/sharding_marks.py)
    marked = (ResnetBlock2D, Downsample2D, Upsample2D, TorchaxGroupNorm)
    settings = ("tile_sample_min_size", "tile_latent_min_size", "tile_overlap_factor")
    _multiples_because: str | None = None  # why images must be whole multiples of the compression, where they must

    def lower(self, vae):
        return self.lowering_on(WindowLowered, vae, self.marked, self.spatial_compression_ratio,
                             rank=4)

    # ----- what the family says -----

    video_channels = of_config(video_channels)

    spatial_compression_ratio = of_config(spatial_ratio)

    latent_shape = with_config(latent_shape)

    def check_video(self, shape, name: str) -> None:
        """Classes whose downsampling folds 2x2 pixels into channels (`_multiples_because`) take only multiples of
        their compression; AutoencoderKL's strided convolutions round down instead."""
        ratio = self.spatial_compression_ratio
        if self._multiples_because and (shape[-2] % ratio or shape[-1] % ratio):
            raise ValueError(f"{name}: height and width must be multiples of {ratio} ({self.model_class.__name__}'s "
                             f"compression: {self._multiples_because}), got {shape[-2]}x{shape[-1]}")

    def _has_statistics(self) -> bool:
        # (the image classes on these calls whose configs have no such keys: Sana's, HunyuanImage's, SVD's)
        return getattr(self.config, "latents_mean", None) is not None and \
            getattr(self.config, "latents_std", None) is not None

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.config
        if self._has_statistics():
            mean, std = self._latent_statistics(latents)
            return (latents - mean) * config.scaling_factor / std
        return (latents - (getattr(config, "shift_factor", None) or 0.0)) * config.scaling_factor

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        """As the pipelines do before `decode`: SD3's and Flux's `latents / scaling_factor + shift_factor`, SDXL's
        `latents * latents_std / scaling_factor + latents_mean` where the config has them; the others' (SD, Sana,
        HunyuanImage, SVD) `latents / scaling_factor`."""
        config = self.config
        if self._has_statistics():
            mean, std = self._latent_statistics(latents)
            return latents * std / config.scaling_factor + mean
        return latents / config.scaling_factor + (getattr(config, "shift_factor", None) or 0.0)

    def _latent_statistics(self, latents):
        shape = (1, self.latent_channels, 1, 1)
        as_tensor = functools.partial(torch.tensor, device=latents.device, dtype=latents.dtype)
        return as_tensor(self.config.latents_mean).view(shape), as_tensor(self.config.latents_std).view(shape)

    # ----- encode / decode: one call, or tiles -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("encode", source, tiled)

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        return self._run("decode", source, tiled)

    def _run(self, kind: str, source, tiled: bool | None) -> jax.Array:
        """One encoder or decoder call on the batch, or diffusers' tiles of it (`tiled`, or the tiling mode)."""
        if tiled is None:
            need = functools.partial(self._untiled_bytes, kind, source)
            name = "encoder" if kind == "encode" else "decoder"
            tiled = self._beyond_a_tile(kind, source.shape) and \
                self.engine.should_tile(name, need, source.shape, self._tile_sizes(kind))
        if tiled:
            return self._tiled(kind, source)
        out = self._call(kind, source)
        self.engine.ran_batch(out)
        return out

    def _tile_sizes(self, kind: str) -> tuple[int, int]:
        """(height, width) of an input tile."""
        tile = self.tile_sample_min_size if kind == "encode" else self.tile_latent_min_size
        return tile, tile

    def _beyond_a_tile(self, kind: str, shape) -> bool:
        """Whether an input of `shape` is one that tiling tiles: larger than a tile, as diffusers decides."""
        tile = self._tile_sizes(kind)
        return shape[-2] > tile[0] or shape[-1] > tile[1]

    def _call(self, kind: str, source, block=None) -> jax.Array:
        """One encoder (+ quant_conv) or (post_quant_conv +) decoder program on the source, or on a block of it
        ((row, col, height, width))."""
        encode = kind == "encode"
        images = source.take() if block is None else source.take(None, block[::2], block[1::2])
        children = ("encoder", "quant_conv") if encode else ("decoder", "post_quant_conv")
        weights = {k: self.engine.weights[k] for k in children if k in self.engine.weights}
        name = ("encoder" if encode else "decoder") + ("" if block is None else "/tile")
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        return self.engine.programs.run(name, step, weights, images)

    def _untiled_bytes(self, kind: str, source) -> int:
        """Device memory of the untiled call: XLA's temp + argument + output bytes (`memory.call_bytes`)."""
        shapes = self.engine.shapes(source.shape)
        with self.engine.programs.recording() as used:
            self._call(kind, shapes)
        return memory.call_bytes(used)

    def _tile_layout(self, kind: str) -> tiling.TileLayout:
        """diffusers' arithmetic: input tiles of the minimum size every (1 - overlap) of it; outputs blended over
        overlap x the output tile, keeping the rest."""
        sample, latent, overlap = self.tile_sample_min_size, self.tile_latent_min_size, self.tile_overlap_factor
        tile, out_tile = (sample, latent) if kind == "encode" else (latent, sample)
        stride, blend = int(tile * (1 - overlap)), int(out_tile * overlap)
        return tiling.TileLayout(tile, tile, stride, stride, blend, blend, out_tile - blend, out_tile - blend)

    def _tiled(self, kind: str, source) -> jax.Array:
        """diffusers' tiled encode or decode: each tile at its own shape, blended and kept as diffusers does."""
        lay = self._tile_layout(kind)
        rows = []
        for row in lay.tiles(*source.shape[-2:]):
            rows.append([])
            for t in row:
                out = self._call(kind, source, (t.row, t.col, t.valid_height, t.valid_width))
                self.engine.ran_batch(out)
                rows[-1].append([out])
        crops = tuple(tuple(tuple(calls[0].shape[-2:]) for calls in row) for row in rows)
        return apply(tiling.assemble, rows, lay=lay, crops=crops)


class KLVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKL`, as diffusers runs it (the module docstring)."""

    family = KL

    def unpack_latents(self, latents: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """Flux's packed latents [B, tokens, C x 4] (2x2 patches) of a height x width image as [B, C, h, w].

        `FluxPipeline._unpack_latents`' arithmetic (tests/test_kl.py compares the two); importing the pipeline
        would import transformers, which a service of VAEs does not need.
        """
        rows, cols = validation.packed_grid(latents, height, width, self.spatial_compression_ratio,
                                            self.latent_channels)
        batch, _, channels = latents.shape
        latents = latents.view(batch, rows, cols, channels // 4, 2, 2).permute(0, 3, 1, 4, 2, 5)
        return latents.reshape(batch, channels // 4, rows * 2, cols * 2)

    # ----- diffusers' interface where AutoencoderKL's differs from the video classes' -----

    def decode(self, z: torch.Tensor, return_dict: bool = True, generator=None):
        """Decodes latents [B, C, H, W] into images, as diffusers does (`generator` is accepted and unused, as
        there: the decoder draws nothing)."""
        return super().decode(z, return_dict=return_dict)

    def tiled_encode(self, x: torch.Tensor, return_dict: bool = True):
        """diffusers' `tiled_encode` of this class: the posterior of `x` encoded in tiles whatever its size."""
        posterior = self.posterior_class(self._tiled_encode(x))
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def _tiled_encode(self, x: torch.Tensor) -> torch.Tensor:
        """diffusers' `_tiled_encode`: the posterior's parameters (moments) of `x`, tiled."""
        return super().tiled_encode(x)

    enable_tiling = tiling_switch()

    # Pipelines' `fuse_qkv_projections()` fuse an AutoencoderKL's attention projections and set diffusers' fused
    # processor; the attention here is already one compiled program (XLA fuses the projections as it sees fit), and
    # these processors compute the same attention, so they are accepted and change nothing. Others are refused.
    SAME_ATTENTION = ("AttnProcessor", "AttnProcessor2_0", "FusedAttnProcessor2_0")

    @_where_diffusers_has
    def fuse_qkv_projections(self) -> None:
        """Accepted, as diffusers' AutoencoderKL; computes the same (see SAME_ATTENTION)."""

    @_where_diffusers_has
    def unfuse_qkv_projections(self) -> None:
        """Accepted, as diffusers' AutoencoderKL; computes the same (see SAME_ATTENTION)."""

    @_where_diffusers_has
    def set_attn_processor(self, processor) -> None:
        """Accepts diffusers' processors that compute the same attention (SAME_ATTENTION); raises for others."""
        processors = processor.values() if isinstance(processor, dict) else [processor]
        other = sorted({type(p).__name__ for p in processors} - set(self.SAME_ATTENTION))
        if other:
            raise NotImplementedError(f"a TorchaxVAE computes its attention as {self.SAME_ATTENTION[0]} does; {other} "
                                      "would compute otherwise, which it cannot: run the diffusers model for that")

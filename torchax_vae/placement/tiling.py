"""Spatial tiling as diffusers' AutoencoderKLCogVideoX.tiled_encode/tiled_decode do it.

Tiles start every `stride` and span the tile size, so the right, bottom and
corner tiles are cut short by the video's edge. Here every tile is run at the
full tile size with its valid extent as data (torchax_vae/patches/tile_mask.py), and
`assemble` crops each output to the size diffusers' shorter tile would have.

diffusers blends each tile with its upper and left neighbours by per-row Python
loops of in-place writes (`blend_v`, `blend_h`). Because the writes are in place,
the neighbour a tile is blended with has itself already been blended with its
own neighbours; `assemble` keeps that order. Each seam here is one vectorized
JAX expression, and the whole assembly (joining frame batches, cropping,
blending, stitching) is one compiled program on the device.
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class TileLayout:
    """Where tiles start in the input, and how their outputs are blended and cropped."""

    tile_height: int  # input tile size
    tile_width: int
    stride_height: int  # distance between tile starts in the input
    stride_width: int
    blend_height: int  # blend extent in the output
    blend_width: int
    keep_height: int  # rows/columns of each output tile that end up in the result
    keep_width: int

    def starts(self, height: int, width: int) -> list[list[tuple[int, int]]]:
        return [[(i, j) for j in range(0, width, self.stride_width)] for i in range(0, height, self.stride_height)]

    def tiles(self, height: int, width: int) -> list[list["Tile"]]:
        """The grid diffusers walks over a height x width input, row by row."""
        return [
            [Tile(i, j, min(self.tile_height, height - i), min(self.tile_width, width - j)) for i, j in row]
            for row in self.starts(height, width)
        ]


@dataclasses.dataclass(frozen=True)
class Tile:
    """One tile: where it starts in the input, and how much of the full tile size lies inside the input."""

    row: int
    col: int
    valid_height: int
    valid_width: int

    @property
    def valid(self) -> tuple[int, int]:
        return (self.valid_height, self.valid_width)


def strided(tile_h, tile_w, stride_h, stride_w, *, out_scale, out_tile=None, out_stride=None) -> TileLayout:
    """diffusers' arithmetic with strides (Wan, Qwen-Image, HunyuanVideo, LTX): input tiles of tile_* every
    stride_*; outputs blended over (out tile - out stride), keeping out stride (default: the input's / out_scale)."""
    out_tile = out_tile or (tile_h // out_scale, tile_w // out_scale)
    out_stride = out_stride or (stride_h // out_scale, stride_w // out_scale)
    return TileLayout(
        tile_height=tile_h,
        tile_width=tile_w,
        stride_height=stride_h,
        stride_width=stride_w,
        blend_height=out_tile[0] - out_stride[0],
        blend_width=out_tile[1] - out_stride[1],
        keep_height=out_stride[0],
        keep_width=out_stride[1],
    )


def layout(in_tile_h, in_tile_w, out_tile_h, out_tile_w, overlap_h, overlap_w) -> TileLayout:
    """diffusers' arithmetic: input tiles of in_tile_*, outputs of out_tile_*, overlap factors."""
    blend_h = int(out_tile_h * overlap_h)
    blend_w = int(out_tile_w * overlap_w)
    return TileLayout(
        tile_height=in_tile_h,
        tile_width=in_tile_w,
        stride_height=int(in_tile_h * (1 - overlap_h)),
        stride_width=int(in_tile_w * (1 - overlap_w)),
        blend_height=blend_h,
        blend_width=blend_w,
        keep_height=out_tile_h - blend_h,
        keep_width=out_tile_w - blend_w,
    )


@functools.partial(jax.jit, static_argnames=("extent", "axis"))
def _blend(a, b, *, extent: int, axis: int):
    """b with its first `extent` entries along `axis` faded in from a's last `extent`."""
    # Weights in float64, rounded once, as torch rounds `1 - y / extent` (a Python float).
    ramp = np.arange(extent, dtype=np.float64) / extent
    shape = [1] * b.ndim
    shape[axis] = extent
    w_b = jnp.asarray(ramp.reshape(shape), dtype=jnp.float32)
    w_a = jnp.asarray((1 - ramp).reshape(shape), dtype=jnp.float32)
    a_tail = jax.lax.slice_in_dim(a, a.shape[axis] - extent, a.shape[axis], axis=axis).astype(jnp.float32)
    b_head = jax.lax.slice_in_dim(b, 0, extent, axis=axis).astype(jnp.float32)
    head = (a_tail * w_a + b_head * w_b).astype(b.dtype)
    return jax.lax.dynamic_update_slice_in_dim(b, head, 0, axis=axis)


def blend(a, b, extent: int, axis: int):
    extent = min(a.shape[axis], b.shape[axis], extent)
    return b if extent <= 0 else _blend(a, b, extent=extent, axis=axis)


@functools.partial(jax.jit, static_argnames=("lay", "crops"))
def assemble(tiles: list[list[list[jax.Array]]], lay: TileLayout, crops: tuple) -> jax.Array:
    """The output from each tile's outputs at full tile size: videos [N, C, T, H, W] as frame batches joined on
    their frames, or one image batch [N, C, H, W] per tile.

    crops[i][j] is the (height, width) of tile (i, j)'s output that is real:
    the size diffusers' own, possibly shorter, tile would have produced.
    """
    cropped = [
        [_joined(batches)[..., :h, :w] for batches, (h, w) in zip(row, crop_row)]
        for row, crop_row in zip(tiles, crops)
    ]
    blended: list[list[jax.Array]] = []
    for i, row in enumerate(cropped):
        out_row = []
        for j, tile in enumerate(row):
            if i > 0:
                tile = blend(blended[i - 1][j], tile, lay.blend_height, axis=tile.ndim - 2)
            if j > 0:
                tile = blend(out_row[j - 1], tile, lay.blend_width, axis=tile.ndim - 1)
            out_row.append(tile)
        blended.append(out_row)
    rows = [jnp.concatenate([t[..., : lay.keep_height, : lay.keep_width] for t in row], axis=-1) for row in blended]
    return jnp.concatenate(rows, axis=-2)


def _joined(batches: list[jax.Array]) -> jax.Array:
    """One tile's outputs as one array: frame batches joined on the frame axis (video), or the one output."""
    return batches[0] if len(batches) == 1 else jnp.concatenate(batches, axis=2)


def extent_at(valid, tile: int, size: int):
    """The valid extent at a resolution `size` of a `tile`-sized input with `valid` valid entries.

    Upsampling multiplies sizes by an integer; downsampling halves them, rounding
    down (CogVideoXDownsample3D pads by one and convolves with stride 2), and the
    valid extent of the smaller tile rounds the same way.
    """
    if size >= tile:
        factor, rest = divmod(size, tile)
        if rest:
            raise ValueError(f"size {size} is not a multiple of the tile size {tile}")
        return valid * factor
    while tile > size:
        tile, valid = tile // 2, valid // 2
    if tile != size:
        raise ValueError(f"size {size} is not the tile size halved (rounding down) from {tile}")
    return valid

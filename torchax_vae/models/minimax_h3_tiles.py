"""MiniMax H3's spatial tiles, as diffusers lays and blends them (`_split_tiles`, `_stitch_tiles` of
AutoencoderKLMiniMaxH3): tiles of one size covering the frame, their overlaps widened in steps of the spatial
ratio to spread the slack, each tile blended with its raw upper and left neighbours."""

import functools
import math

import jax
import jax.numpy as jnp

from torchax_vae.placement import tiling

__all__ = ["split_tiles", "stitch"]


def split_tiles(length: int, tile: int, overlap: int, ratio: int) -> tuple[list[int], int, list[int]]:
    """diffusers' `_split_tiles`: (tile starts, tile size, overlaps) covering `length` pixels."""
    if tile >= length:
        return [0], length, []
    count = math.ceil(length / tile)
    while tile * count - overlap * (count - 1) - length < 0:
        count += 1
    overlaps = [overlap] * (count - 1)
    for i in range((tile * count - sum(overlaps) - length) // ratio):
        overlaps[i % (count - 1)] += ratio
    starts = [0]
    for i in range(count - 1):
        starts.append(starts[-1] + tile - overlaps[i])
    return starts, tile, overlaps


@functools.partial(jax.jit, static_argnames=("rows", "cols"))
def stitch(tiles, *, rows: tuple, cols: tuple):
    """diffusers' `_stitch_tiles`: each tile blended with its raw upper and left neighbours (diffusers' linear fade,
    tiling.blend), then cut before the overlap with the next."""
    out_rows = []
    for i, row in enumerate(tiles):
        kept = []
        for j, tile in enumerate(row):
            if i > 0:
                tile = tiling.blend(tiles[i - 1][j], tile, extent=rows[i - 1], axis=3)
            if j > 0:
                tile = tiling.blend(row[j - 1], tile, extent=cols[j - 1], axis=4)
            if i < len(tiles) - 1:
                tile = tile[:, :, :, : tile.shape[3] - rows[i]]
            if j < len(row) - 1:
                tile = tile[:, :, :, :, : tile.shape[4] - cols[j]]
            kept.append(tile)
        out_rows.append(jnp.concatenate(kept, axis=4))
    return jnp.concatenate(out_rows, axis=3)

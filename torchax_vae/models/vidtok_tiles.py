"""AutoencoderVidTok's tiled encode and decode (models/vidtok.py), as diffusers' `tiled_encode` / `tiled_decode`
loop: spatial tiles of `tile_sample_min_*` (latent tiles of `tile_latent_min_*` to decode) every
`int(tile * (1 - overlap_factor))`, each tile's frames in diffusers' causal chunks (`build_chunk_start_end`: the
first `temporal ratio` frames, then `num_sample_frames_batch_size` at a time, a short last chunk merged into the one
before; to decode, the first latent frame, then `num_latent_frames_batch_size`, each causal chunk with one more
latent frame whose `ratio` decoded frames it drops). Each chunk is one program of (weights, chunk, cache): the
modules' causal caches go from chunk to chunk on the device (`VidTokLowered.chunk_step`), so a tile's programs are
its first chunk's and the steady ones', whatever its length. The tiles are then blended as diffusers blends them:
each with the tile above and the one to its left, both as already blended (diffusers blends in place), over
`int(tile * overlap_factor)` rows and columns, and cropped to `tile - that`.
"""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
from diffusers import AutoencoderVidTok

from torchax_vae.engine.arrays import apply


def chunks(family, frames: int, decoder: bool) -> list[tuple[int, int]]:
    """diffusers' (start, end) chunks of a tile's frames (its own `build_chunk_start_end`)."""
    settings = types.SimpleNamespace(
        is_causal=family.is_causal, temporal_compression_ratio=family.temporal_compression_ratio,
        num_sample_frames_batch_size=family.num_sample_frames_batch_size,
        num_latent_frames_batch_size=family.num_latent_frames_batch_size)
    return [tuple(span) for span in AutoencoderVidTok.build_chunk_start_end(settings, frames, decoder_mode=decoder)]


def tiled(family, kind: str, source) -> jax.Array:
    """The tiled encode's moments or the tiled decode's frames (before decode's causal crop) of a source."""
    decoder = kind == "decode"
    frames, height, width = source.shape[2:]
    if decoder and not family.is_causal and frames % family.num_latent_frames_batch_size:  # as diffusers' `_decode`
        frames = frames // family.num_latent_frames_batch_size * family.num_latent_frames_batch_size
    sample = (family.tile_sample_min_height, family.tile_sample_min_width)
    latent = (family.tile_latent_min_height, family.tile_latent_min_width)
    factors = (family.tile_overlap_factor_height, family.tile_overlap_factor_width)
    tile, out_tile = (latent, sample) if decoder else (sample, latent)
    strides = [int(t * (1 - f)) for t, f in zip(tile, factors)]
    extents = tuple(int(t * f) for t, f in zip(out_tile, factors))
    limits = tuple(t - e for t, e in zip(out_tile, extents))
    role = "decoder" if decoder else "encoder"
    weights = {role: family.engine.weights[role]}
    spans = chunks(family, frames, decoder)
    rows = []
    for i in range(0, height, strides[0]):
        rows.append([])
        for j in range(0, width, strides[1]):
            rows[-1].append(_tile(family, role, weights, source, spans, frames, (i, min(tile[0], height - i)),
                                  (j, min(tile[1], width - j))))
    return apply(_assemble, rows, extents=extents, limits=limits)


def _tile(family, role: str, weights, source, spans, frames: int, rows, cols) -> jax.Array:
    """One spatial tile's chunks, each continuing from the caches the one before left; joined on frames."""
    causal, ratio = family.is_causal, family.temporal_compression_ratio
    step = functools.partial(family.lowered.chunk_step, role=role)
    cache, outs = None, []
    for start, end in spans:
        overlap = role == "decoder" and causal and end + 1 <= frames  # one more latent frame, its frames dropped
        chunk = source.take((start, end + 1 if overlap else end), rows, cols)
        name = f"{role}/chunk" + ("" if cache is not None else "/first")
        out, cache = family.engine.programs.run(name, step, weights, chunk, cache)
        outs.append(apply(_drop_last, out, count=ratio) if overlap else out)
    return outs[0] if len(outs) == 1 else apply(_join_frames, outs)


def read_part(module):
    """The part of a module's `causal_cache` that its next chunk reads: a causal convolution's last `time_pad` frames
    (none for a pointwise one), the samplers' whole (already a frame or `num_temp_upsample` frames)."""
    kept = module.causal_cache
    pad = getattr(module, "time_pad", None)
    return kept if pad is None else kept[:, :, kept.shape[2] - pad:]


def decoder_offsets(model):
    """diffusers' `cache_offset`s for its causal decoder's overlapping chunks (`tiled_decode`), by temporal ratio."""
    decoder, ratio = model.decoder, model.temporal_compression_ratio
    up = decoder.up_temporal
    table = {  # (each entry built only for its ratio: a model has the levels its ratio needs)
        4: lambda: [([decoder], 1), ([up[2].upsample, up[1]], 2), ([up[1].upsample, up[0], decoder.conv_out], 4)],
        2: lambda: [([decoder], 1), ([up[2].upsample, up[1], up[0], decoder.conv_out], 2)],
        8: lambda: [([decoder], 1), ([up[3].upsample, up[2]], 2), ([up[2].upsample, up[1]], 4),
                    ([up[1].upsample, up[0], decoder.conv_out], 8)],
    }
    if ratio not in table:
        raise ValueError(f"AutoencoderVidTok's tiled decode supports 2x, 4x or 8x temporal downsampling; this "
                         f"model's is {ratio}x")
    for modules, offset in table[ratio]():
        model._set_cache_offset(modules, offset)


def _drop_last(out, *, count: int):
    return out[:, :, :-count]


def _join_frames(outs):
    return jnp.concatenate(outs, axis=2)


def _ramps(extent: int, dtype):
    """diffusers' blend weights of the row (column) y < extent: the earlier tile's 1 - y / extent, the later's
    y / extent (Python floats, as torch takes them)."""
    later = np.arange(extent, dtype=np.float64) / extent
    return jnp.asarray((1 - later).astype(np.float32), dtype), jnp.asarray(later.astype(np.float32), dtype)


def _blend(a, b, extent: int, axis: int):
    """diffusers' `blend_v` (axis 3) or `blend_h` (axis 4): b's first rows faded in from a's last."""
    extent = min(a.shape[axis], b.shape[axis], extent)
    if extent <= 0:
        return b
    earlier, later = _ramps(extent, b.dtype)
    shape = [1] * b.ndim
    shape[axis] = extent
    head = (jax.lax.slice_in_dim(a, a.shape[axis] - extent, a.shape[axis], axis=axis) * earlier.reshape(shape)
            + jax.lax.slice_in_dim(b, 0, extent, axis=axis) * later.reshape(shape))
    return jnp.concatenate([head, jax.lax.slice_in_dim(b, extent, b.shape[axis], axis=axis)], axis=axis)


@functools.partial(jax.jit, static_argnames=("extents", "limits"))
def _assemble(rows, *, extents, limits):
    blended = [[None] * len(row) for row in rows]
    out_rows = []
    for i, row in enumerate(rows):
        kept = []
        for j, tile in enumerate(row):
            if i > 0:
                tile = _blend(blended[i - 1][j], tile, extents[0], 3)
            if j > 0:
                tile = _blend(blended[i][j - 1], tile, extents[1], 4)
            blended[i][j] = tile
            kept.append(tile[:, :, :, : limits[0], : limits[1]])
        out_rows.append(jnp.concatenate(kept, axis=4))
    return jnp.concatenate(out_rows, axis=3)

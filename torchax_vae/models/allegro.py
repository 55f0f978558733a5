"""The Allegro family: diffusers' AutoencoderKLAllegro (AllegroPipeline).

How diffusers runs it: only tiled (its `_encode`/`_decode` raise NotImplementedError without
`enable_tiling()`). `tiled_encode` and `tiled_decode` walk fixed 3-D tiles over frames, height and width: the
instance's `kernel` (24 frames x `sample_size` x `sample_size`, 320 in the released config) every `stride`
(16 frames, 200 rows, 240 columns), the count rounded down, so a video smaller than a tile gets no tile and
the parts past the last whole tile stay zero. Each tile is one encoder (or decoder) call; each output tile is
weighted by linear ramps over its overlaps (`_prepare_for_blend`) and added into the result. quant_conv runs
once on the assembled moments, post_quant_conv once on the latents (here: on each latent tile, the same
pointwise values). `decode` returns [B, F, C, H, W] (`decoded_layout`); AllegroPipeline permutes it back.

Here: one encoder and one decoder program of the tile's shape (whatever the video's size or length), the
ramps and the sum in one jitted JAX function on the device, tiles added in diffusers' order. Always tiled, so
`enable_tiling()` is not needed. A batch runs each tile for the whole batch (diffusers' loop takes one video:
its own class needs slicing for more). A video or latents smaller than one tile get what diffusers returns, with
a `ZeroOutputWarning`: zeros from decode, quant_conv's bias from encode (no tile program runs); the command and
the service refuse them. diffusers' own pipeline tests decode such latents, with the VAE in training mode: since
nothing runs there, that computes as diffusers does; a tile in training mode raises (`_check_training`).
"""

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.allegro", "AllegroVAE"] entry by looking the
# base class up in this module.
from diffusers import AutoencoderKLAllegro, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_allegro import AllegroTemporalConvLayer
from diffusers.models.downsampling import Downsample2D
from diffusers.models.resnet import ResnetBlock2D
from diffusers.models.upsampling import Upsample2D

from torchax_vae.facade.family import Family, of_config, with_config
from torchax_vae.engine.sources import ShapeSource
from torchax_vae.engine.validation import ZeroOutputWarning
from torchax_vae.engine.arrays import apply
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.models.windows import WindowLowered

__all__ = ["Allegro", "AllegroVAE", "latent_shape", "video_channels"]


def video_channels(config) -> int:
    return config.in_channels


def spatial_ratio(config) -> int:
    return 2 ** (len(config.block_out_channels) - 1)


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video, as tiled_encode
    sizes them (each axis divided and rounded down)."""
    batch, _, frames, height, width = video_shape
    rt, rs = int(config.temporal_compression_ratio), spatial_ratio(config)
    return (batch, config.latent_channels, frames // rt, height // rs, width // rs)


class AllegroLowered(WindowLowered):
    """The private, patched copy's calls: encoder and decoder tiles, and the quant convolutions as diffusers
    applies them (each frame as a 2-D image)."""

    def _run(self, ratio: int, fn, weights, x):
        """fn(weights, x) traced in torch on JAX arrays; `ratio`: x's spatial size over its program's smallest level."""
        dtype = x.dtype
        weights, x = self.env.j2t_iso((weights, x))
        with self._tracing(dtype, x.shape, ratio):
            out = fn(weights, x)
        return self.env.t2j_iso(out)

    def _by_frames(self, child: str, weights, x):
        """A 2-D child (the quant convolutions) on each frame, as diffusers folds frames into the batch."""
        batch = x.shape[0]
        h = self._call(child, weights, x.permute(0, 2, 1, 3, 4).flatten(0, 1))
        return h.unflatten(0, (batch, -1)).permute(0, 2, 1, 3, 4)

    def encode_step(self, weights, tile):
        """One encoder call on a tile: its moments before quant_conv."""
        return self._run(self.spatial_ratio, lambda w, t: self._call("encoder", w, t), weights, tile)

    def quant_step(self, weights, moments):
        """quant_conv on the assembled moments (diffusers' tiled_encode, its last lines)."""
        return self._run(1, lambda w, m: self._by_frames("quant_conv", w, m), weights, moments)

    def decode_step(self, weights, tile):
        """post_quant_conv (pointwise: on a tile, the values it has on the whole latents), then one decoder call."""
        return self._run(1, lambda w, z: self._call("decoder", w, self._by_frames("post_quant_conv", w, z)),
                         weights, tile)


def tile_starts(size: int, kernel: int, stride: int) -> list[int]:
    """Where diffusers' tiles start along one axis: floor((size - kernel) / stride) + 1 of them."""
    return [i * stride for i in range(max(math.floor((size - kernel) / stride) + 1, 0))]


def _ramps(index: int, count: int, overlap: int, length: int, blend: bool) -> np.ndarray:
    """A tile's weights along one axis, as `_prepare_for_blend`: rising over its first `overlap` entries unless it
    is the first tile, falling over its last unless it is the last (float32, as torch's arange(...).float())."""
    w = np.ones(length, np.float32)
    if blend and overlap > 0:
        ramp = np.arange(overlap, dtype=np.float32) / np.float32(overlap)
        if index > 0:
            w[:overlap] *= ramp
        if index < count - 1:
            w[length - overlap:] *= np.float32(1) - ramp
    return w


@functools.partial(jax.jit, static_argnames=("grid", "overlap", "size"))
def assemble(tiles, *, grid: tuple, overlap: tuple, size: tuple):
    """diffusers' blend-and-add: each tile (index (i, j, k) of `grid`, each a tuple of starts) weighted by its
    ramps over `overlap` (frames, rows, columns) and added, in diffusers' order, into zeros of `size`."""
    first = tiles[0]
    out = jnp.zeros(first.shape[:2] + tuple(size), first.dtype)
    kf, kh, kw = first.shape[2:]
    (frames, rows, cols) = grid
    t = 0
    for i, n in enumerate(frames):
        for j, h in enumerate(rows):
            for k, w in enumerate(cols):
                tile = tiles[t]
                t += 1
                for axis, (index, count, extent, length, blend) in enumerate(
                        ((i, len(frames), overlap[0], kf, overlap[0] > 0), (j, len(rows), overlap[1], kh, True),
                         (k, len(cols), overlap[2], kw, True))):
                    shape = [1] * 5
                    shape[2 + axis] = length
                    weight = jnp.asarray(_ramps(index, count, extent, length, blend).reshape(shape))
                    tile = (tile * weight).astype(first.dtype)
                out = out.at[:, :, n:n + kf, h:h + kh, w:w + kw].add(tile)
    return out


class Allegro(Family):
    """diffusers' `AutoencoderKLAllegro`, as diffusers runs it (module docstring)."""

    model_class = AutoencoderKLAllegro
    marked = (ResnetBlock2D, AllegroTemporalConvLayer, Downsample2D, Upsample2D)
    decoded_layout = "BFCHW"  # what decode returns; AllegroPipeline.decode_latents permutes it to BCFHW
    settings = ("kernel", "stride")  # diffusers' tile (frames, height, width) and where tiles start

    def __init__(self, vae, engine=None):
        super().__init__(vae, engine)
        self.kernel, self.stride = tuple(vae.kernel), tuple(vae.stride)  # diffusers' tile (frames, height, width)

    def lower(self, vae):
        return self.lowering_on(AllegroLowered, vae, self.marked, spatial_ratio(vae.config))

    video_channels = of_config(video_channels)

    spatial_compression_ratio = of_config(spatial_ratio)

    @property
    def temporal_compression_ratio(self) -> int:
        return int(self.config.temporal_compression_ratio)

    latent_shape = with_config(latent_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as AllegroPipeline.decode_latents

    def _latent_kernel(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        rt, rs = self.temporal_compression_ratio, self.spatial_compression_ratio
        kernel = (self.kernel[0] // rt, self.kernel[1] // rs, self.kernel[2] // rs)
        stride = (self.stride[0] // rt, self.stride[1] // rs, self.stride[2] // rs)
        return kernel, stride

    def check_video(self, shape, name: str) -> None:
        if any(size < k for size, k in zip(shape[2:], self.kernel)):
            warnings.warn(f"{name} is {shape[2]}x{shape[3]}x{shape[4]} (shape {tuple(shape)}), smaller than one of "
                          f"AutoencoderKLAllegro's {'x'.join(map(str, self.kernel))} tiles (frames x height x width): "
                          "its moments are quant_conv's bias, as diffusers returns there", ZeroOutputWarning,
                          stacklevel=4)

    def check_latents(self, shape, name: str) -> None:
        kernel, _ = self._latent_kernel()
        if any(size < k for size, k in zip(shape[2:], kernel)):
            warnings.warn(f"{name} is {shape[2]}x{shape[3]}x{shape[4]} (shape {tuple(shape)}), smaller than one of "
                          f"AutoencoderKLAllegro's latent tiles ({'x'.join(map(str, kernel))}): the video is zeros, "
                          "as diffusers returns there", ZeroOutputWarning, stacklevel=4)

    def check_training(self) -> None:
        """Checked per tile (`_tiles`): below one tile no program runs, so training mode computes as eval there."""

    def _zeros(self, source, channels: int, size) -> jax.Array:
        """What diffusers' loops leave where no tile fits: zeros of [B, channels, *size] (or their shape)."""
        shape = (source.shape[0], channels, *size)
        dtype, sharding = self.engine.jax_dtype, self.engine.placement.activation(shape)
        if isinstance(source, ShapeSource):
            return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)
        return jax.device_put(jnp.zeros(shape, dtype), sharding)

    def _tiles(self, kind: str, source, kernel, stride, step, weights):
        grid = tuple(tile_starts(size, k, s) for size, k, s in zip(source.shape[2:], kernel, stride))
        if all(grid):
            self.engine.check_training()
        outs = []
        for n in grid[0]:
            for h in grid[1]:
                for w in grid[2]:
                    chunk = source.take((n, n + kernel[0]), (h, kernel[1]), (w, kernel[2]))
                    outs.append(self.engine.programs.run(f"{kind}/tile", step, weights, chunk))
                    self.engine.ran_batch(outs[-1])
        return outs, grid

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        weights = {"encoder": self.engine.weights["encoder"]}
        outs, grid = self._tiles("encoder", source, self.kernel, self.stride, self.lowered.encode_step, weights)
        kernel, stride = self._latent_kernel()
        rt, rs = self.temporal_compression_ratio, self.spatial_compression_ratio
        frames, height, width = source.shape[2:]
        starts = tuple(tuple(s // r for s in axis) for axis, r in zip(grid, (rt, rs, rs)))
        overlap = tuple(k - s for k, s in zip(kernel, stride))
        size = (frames // rt, height // rs, width // rs)
        if not outs:  # no tile fits: zero moments (quant_conv then gives its bias)
            moments = self._zeros(source, 2 * self.latent_channels, size)
        else:
            moments = apply(assemble, outs, grid=starts, overlap=overlap, size=size)
        if isinstance(moments, jax.ShapeDtypeStruct):  # shapes only (precompile, plan): placed as a real one would be
            moments = jax.ShapeDtypeStruct(moments.shape, moments.dtype,
                                           sharding=self.engine.placement.activation(moments.shape))
        return self.engine.programs.run("quant_conv", self.lowered.quant_step, {"quant_conv": self.engine.weights["quant_conv"]},
                                  moments)

    def decode(self, source, tiled: bool | None = None) -> jax.Array:
        weights = {k: self.engine.weights[k] for k in ("post_quant_conv", "decoder")}
        kernel, stride = self._latent_kernel()
        outs, grid = self._tiles("decoder", source, kernel, stride, self.lowered.decode_step, weights)
        rt, rs = self.temporal_compression_ratio, self.spatial_compression_ratio
        frames, height, width = source.shape[2:]
        starts = tuple(tuple(s * r for s in axis) for axis, r in zip(grid, (rt, rs, rs)))
        overlap = tuple(k - s for k, s in zip(self.kernel, self.stride))
        size = (frames * rt, height * rs, width * rs)
        if not outs:  # no tile fits: diffusers' zeros
            video = self._zeros(source, self.config.out_channels, size)
        else:
            video = apply(assemble, outs, grid=starts, overlap=overlap, size=size)
        return apply(_frames_first, video)


class AllegroVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLAllegro`, as diffusers runs it (module docstring)."""

    family = Allegro

    @property
    def temporal_compression_ratio(self) -> int:
        return self._family.temporal_compression_ratio


def _frames_first(video):
    return jnp.transpose(video, (0, 2, 1, 3, 4))

"""diffusers' feat_cache VAEs: AutoencoderKLWan and the class derived from it, AutoencoderKLQwenImage.

How diffusers runs them, and how these adapters do:

- Encode: the first frame alone, then chunks of 4 frames (frames past the last
  whole chunk are dropped, as diffusers drops them); decode: one latent frame
  per decoder call. Every call reads and writes `feat_cache`, a Python list
  that diffusers mutates in place, indexed by a `feat_idx=[0]` counter, with
  one entry per causal convolution: None, the string "Rep" (a temporal
  upsampler that has seen only the first chunk), or the last frames of that
  convolution's input.
- Here each call is a jitted program of (weights, frames, cache); the list is
  built from the argument inside the trace, diffusers' forward fills it, and
  the program returns it as a tuple of arrays that stays on the device for the
  next call. The entries are brought to one shape on the way out, so that the
  second and every later call are the same program: a one-frame entry gets a
  zero frame in front (the causal padding it stands in for is zeros), and
  "Rep" becomes two zero frames (what the upsampler's time convolution pads
  with when it sees "Rep"). So a video of any length compiles two programs per
  resolution for decode (the first call, and the rest), and two for encode;
  an image (one frame, Qwen-Image) one each way, which returns no cache.
- Patchify (Wan 2.2) before the encoder, and unpatchify and the clamp to
  [-1, 1] after the decoder, act on each frame alone, so they run inside the
  per-chunk programs; with tiling they run after blending, as in diffusers.
- Tiling: diffusers' tiled_encode/tiled_decode, each tile at its own exact
  shape (the mid block's spatial attention sees the whole tile, so a
  zero-padded tile would change the result), a fresh cache per tile, and the
  blend of torchax_vae.placement.tiling. "auto" (the engine's tiling mode) measures the
  two untiled chunk programs.
- Latent normalization, as the pipelines apply it: `latents_mean` and
  `latents_std` from the config.

What a family of this kind says (`FeatCache`'s class attributes and
properties): its diffusers class, its resample layer (whose "Rep" entry
needs a shape), whether the decoder takes diffusers' `first_chunk` flag, its
patch size, its channels and compression ratios. `FeatCacheVAE` is the facade
these families share: diffusers' `enable_tiling` arguments, `clear_cache`,
and the attributes pipelines read (`z_dim`, `temperal_downsample`).
"""

import functools

import jax
import jax.numpy as jnp
import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import patchify, unpatchify
from jax.sharding import Mesh

from torchax_vae import patches
from torchax_vae.engine import memory
from torchax_vae.placement import tiling
from torchax_vae.facade.family import Family, config_value, whole_groups
from torchax_vae.engine.lowering import Lowered
from torchax_vae.engine.arrays import apply, join
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import tiling_switch

# diffusers' encoder chunking: the first frame, then this many frames per call
ENCODE_CHUNK = 4


def encode_chunks(num_frames: int) -> list[tuple[int, int]]:
    """The (start, end) frame ranges diffusers' `_encode` passes to one encoder call each."""
    calls = 1 + (num_frames - 1) // ENCODE_CHUNK
    return [(0, 1)] + [(1 + ENCODE_CHUNK * (i - 1), 1 + ENCODE_CHUNK * i) for i in range(1, calls)]


class FeatCacheLowered(Lowered):
    """A feat_cache VAE's per-call step functions, pure in JAX arrays (the module docstring).

    resample_class: the family's resample layer, whose first upsampling call stores "Rep".
    first_chunk: whether the decoder takes diffusers' `first_chunk` flag (Wan's does; Qwen-Image's does not).
    patch: the patch size the video is patchified by before the encoder (Wan 2.2), or None.
    The other arguments: `Lowered`'s.
    """

    def __init__(self, vae, resample_class: type, first_chunk: bool, patch: int | None,
                 mesh: Mesh | None = None, platform: str | None = None, marked: tuple = (), spatial_ratio: int = 1):
        super().__init__(vae, mesh, platform, marked, spatial_ratio)
        self.patch = patch
        self.first_chunk = first_chunk
        self.counts = dict(vae._cached_conv_counts)  # feat_cache entries of the encoder and decoder
        # While a first decoder call is traced: feat_cache index -> the shape a "Rep" entry stands for.
        self._rep_shapes: dict[int, tuple] = {}
        for module in self.model.modules():
            if isinstance(module, resample_class) and module.mode == "upsample3d":
                module.register_forward_pre_hook(self._note_rep, with_kwargs=True)

    def _note_rep(self, module, args, kwargs):
        cache, index = kwargs.get("feat_cache"), kwargs.get("feat_idx")
        if cache is None and len(args) > 1:  # called positionally: (x, feat_cache, feat_idx)
            cache, index = args[1], args[2]
        if cache is not None and cache[index[0]] is None:  # diffusers is about to store "Rep" here
            batch, channels, _, height, width = args[0].shape
            self._rep_shapes[index[0]] = (batch, channels, 2, height, width)

    def _carried(self, feat_cache: list, like) -> tuple:
        """feat_cache as the next call's argument, every entry at its steady shape (module docstring)."""
        carried = []
        for index, entry in enumerate(feat_cache):
            if isinstance(entry, str):  # "Rep"
                entry = like.new_zeros(self._rep_shapes[index])
            elif entry is not None and entry.shape[2] == 1:
                entry = torch.cat([torch.zeros_like(entry), entry], dim=2)
            # on a mesh, the same sharding from the first program as from the steady one: one steady program
            # (unmarked, Wan 2.1's 480p decode compiled its steady program twice for v6e-8, 44 s more)
            carried.append(None if entry is None else patches.sharding_marks.mark(entry))
        return tuple(carried)

    def _cache_list(self, cache, role: str) -> list:
        return [None] * self.counts[role] if cache is None else list(cache)

    def encode_step(self, weights, frames, cache, carry: bool = True):
        """One encoder call (and quant_conv) on a chunk of frames: (moments, cache); cache None for the first.

        carry: return the cache for a next call (False for the only call: an image would otherwise hand out a
        cache as large as every layer's input, 20 GB for a 1328x1328 Qwen-Image decode).
        """
        dtype = frames.dtype
        weights, frames, cache = self.env.j2t_iso((weights, frames, cache))
        with self._tracing(dtype, frames.shape, self.spatial_ratio):
            x = patchify(frames, self.patch) if self.patch else frames
            feat_cache = self._cache_list(cache, "encoder")
            h = self._call("encoder", weights, x, feat_cache=feat_cache, feat_idx=[0])
            h = self._call("quant_conv", weights, h)
            carried = self._carried(feat_cache, h) if carry else None
        return self.env.t2j_iso((h, carried))

    def decode_step(self, weights, latents, cache, finish: bool = True, carry: bool = True):
        """One decoder call on one latent frame: (frames, cache); cache None for the first.

        finish: unpatchify and clamp the output (False for tiles, which diffusers finishes after blending).
        carry: as for `encode_step`.
        """
        dtype = latents.dtype
        weights, latents, cache = self.env.j2t_iso((weights, latents, cache))
        with self._tracing(dtype, latents.shape, 1):
            x = self._call("post_quant_conv", weights, latents)
            feat_cache = self._cache_list(cache, "decoder")
            flags = {"first_chunk": cache is None} if self.first_chunk else {}
            out = self._call("decoder", weights, x, feat_cache=feat_cache, feat_idx=[0], **flags)
            carried = self._carried(feat_cache, out) if carry else None
            if finish:
                out = finish_decoded(out, self.patch)
        return self.env.t2j_iso((out, carried))


def finish_decoded(out, patch):
    """diffusers' last steps of a decode: unpatchify (Wan 2.2) and clamp to [-1, 1]."""
    if patch:
        out = unpatchify(out, patch_size=patch)
    return torch.clamp(out, min=-1.0, max=1.0)


class FeatCache(Family):
    """The shared part of the feat_cache families (see the module docstring).

    Each encoder or decoder call of diffusers' loop is one program; a video of
    any length compiles two per resolution for decode and two for encode (the
    first call, and the rest). Tiling and slicing follow diffusers' own
    settings; by default (`tiling_mode` "auto") an input larger than a tile is
    tiled only when its untiled chunk programs would need more memory than is free.
    """

    resample_class: type = None  # the family's resample layer (its first upsampling call stores "Rep")
    first_chunk: bool = False  # whether the family's decoder takes diffusers' first_chunk flag
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height",
                "tile_sample_stride_width")

    def lower(self, vae):
        placement = self.engine.placement
        return FeatCacheLowered(vae, self.resample_class, self.first_chunk, self.patch_size, placement.mesh,
                                placement.platform, self.marked, self.spatial_compression_ratio)

    @property
    def patch_size(self) -> int | None:
        """The patch size the video is patchified by before the encoder, or None."""
        return None

    latent_channels = config_value("z_dim")

    def _normalization(self, latents: torch.Tensor):
        shape = (1, self.config.z_dim, 1, 1, 1)
        mean = torch.tensor(self.config.latents_mean).view(shape).to(latents.device, latents.dtype)
        inv_std = 1.0 / torch.tensor(self.config.latents_std).view(shape).to(latents.device, latents.dtype)
        return mean, inv_std

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, inv_std = self._normalization(latents)
        return (latents - mean) * inv_std  # as WanImageToVideoPipeline.prepare_latents

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, inv_std = self._normalization(latents)
        return latents / inv_std + mean  # as WanPipeline and QwenImagePipeline before decoding

    # ----- encode / decode -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        height, width = source.shape[3:]
        if tiled is None:
            tile = (self.tile_sample_min_height, self.tile_sample_min_width)
            need = functools.partial(self._untiled_bytes, "encode", source)
            tiled = (height > tile[0] or width > tile[1]) and self.engine.should_tile("encoder", need, source.shape, tile)
        if tiled:
            return self._tiled_encode(source)
        return apply(join, self._calls("encode", source), axis=2)

    def decode_chunks(self, source, tiled: bool | None = None):
        """One chunk per latent frame (diffusers' decoder calls); tiled, each frame's tiles blended."""
        height, width = source.shape[3:]
        if tiled is None:
            ratio = self.spatial_compression_ratio
            tile = (self.tile_sample_min_height // ratio, self.tile_sample_min_width // ratio)
            need = functools.partial(self._untiled_bytes, "decode", source)
            tiled = (height > tile[0] or width > tile[1]) and self.engine.should_tile("decoder", need, source.shape, tile)
        if tiled:
            return self._tiled_decode(source)
        return self._steps("decode", source)

    def _calls(self, kind: str, source, block=None, count: int | None = None) -> list:
        """The outputs of diffusers' encoder (first frame, then 4 at a time) or decoder (a latent frame each) calls.

        block: a (row, col, height, width) tile of the source, whose decoded
        output is left raw (diffusers finishes tiles after blending). count: only
        the first `count` calls, unreported (to measure the programs).
        """
        return list(self._steps(kind, source, block, count))

    def _steps(self, kind: str, source, block=None, count: int | None = None, state=None, alone: bool | None = None,
               ranges=None):
        """`_calls` as a generator: each call's output as it is queued, the cache carried on the device.

        state: a session's carried cache (None: the video's first call); alone: whether this is the only call
        (an image: no cache to hand on; default: the source has one call); ranges: the calls' frame ranges
        (default: diffusers' for a whole video). The generator returns the last cache (a session's next state).
        """
        encode = kind == "encode"
        name = "encoder" if encode else "decoder"
        weights = {k: self.engine.weights[k] for k in (("encoder", "quant_conv") if encode else ("decoder", "post_quant_conv"))}
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        if block is not None:
            name += "/tile"
            step = step if encode else functools.partial(step, finish=False)
        frames = source.shape[2]
        chunks = ranges or self.call_ranges(frames, True, kind)
        if (len(chunks) == 1 and state is None) if alone is None else alone:  # the only call: no cache to hand on
            name, step = f"{name}/alone", functools.partial(step, carry=False)
        cache = state
        for chunk_frames in chunks[:count]:
            chunk = source.take(chunk_frames) if block is None else source.take(chunk_frames, block[::2], block[1::2])
            program = name if cache is None else f"{name}+feat_cache"
            out, cache = self.engine.programs.run(program, step, weights, chunk, cache)
            if count is None:
                self.engine.ran_batch(out)
            yield out
        return cache

    # ----- a session: latent chunks of any size (video chunks of whole encoder calls), the cache carried -----

    carries_state = True

    def session_chunks(self, frames: int, first: bool, kind: str = "decode") -> str | None:
        if kind == "decode":
            return None
        # diffusers' encoder takes the first frame alone, then 4 at a time: a chunk must end where a call does
        return whole_groups(frames, first, ENCODE_CHUNK)

    def call_ranges(self, frames: int, first: bool, kind: str = "decode") -> list[tuple[int, int]]:
        """diffusers' calls: a latent frame each; the first video frame alone, then ENCODE_CHUNK at a time."""
        if kind == "decode":
            return [(k, k + 1) for k in range(frames)]
        return encode_chunks(frames) if first else [(k, k + ENCODE_CHUNK) for k in range(0, frames, ENCODE_CHUNK)]

    def chunk_loop(self, kind: str, source, ranges, state):
        """Every call of the ranges, carrying the feat_cache (one program for the session's first call, one for
        every later one): the same calls as a whole video's, so the same frames (or moments)."""
        return self._steps(kind, source, state=state, alone=False, ranges=ranges)

    def _untiled_bytes(self, kind: str, source) -> int:
        """Device memory of the largest untiled chunk program (first or steady) with its arguments and outputs."""
        shapes = self.engine.shapes(source.shape)
        with self.engine.programs.recording() as used:
            self._calls(kind, shapes, count=2)
        return memory.call_bytes(used)

    def _tiled_encode(self, source) -> jax.Array:
        """diffusers' tiled_encode: tiles of the (patchified) video, each at its own shape."""
        patch = self.patch_size or 1
        ratio = self.spatial_compression_ratio // patch
        height, width = source.shape[3] // patch, source.shape[4] // patch  # patchified, as diffusers tiles it
        lay = tiling.strided(self.tile_sample_min_height, self.tile_sample_min_width,
                      self.tile_sample_stride_height, self.tile_sample_stride_width, out_scale=ratio)
        tiles = [
            [self._calls("encode", source,
                         (t.row * patch, t.col * patch, t.valid_height * patch, t.valid_width * patch))
             for t in row]
            for row in lay.tiles(height, width)
        ]
        return apply(_assemble, tiles, lay=lay, size=(height // ratio, width // ratio), patch=None)

    def _tiled_decode(self, source):
        """diffusers' tiled_decode: latent tiles at their own shapes, blended, then finished; a generator of
        frames, each blended once every tile has decoded it."""
        patch = self.patch_size or 1
        ratio = self.spatial_compression_ratio
        height, width = source.shape[3:]
        lay = tiling.strided(self.tile_sample_min_height // ratio, self.tile_sample_min_width // ratio,
                      self.tile_sample_stride_height // ratio, self.tile_sample_stride_width // ratio,
                      out_scale=ratio // patch,
                      out_tile=(self.tile_sample_min_height // patch, self.tile_sample_min_width // patch),
                      out_stride=(self.tile_sample_stride_height // patch, self.tile_sample_stride_width // patch))
        grid = [[self._steps("decode", source, (t.row, t.col, t.valid_height, t.valid_width)) for t in row]
                for row in lay.tiles(height, width)]
        size = (height * ratio // patch, width * ratio // patch)
        # a frame's tiles blended as soon as each tile has decoded it: every tile carries its own cache
        for calls in zip(*(tile for row in grid for tile in row)):
            it = iter(calls)
            tiles = [[[next(it)] for _ in row] for row in grid]
            yield apply(_assemble, tiles, lay=lay, size=size, patch=self.patch_size or 0)


class FeatCacheVAE(TorchaxVAE):
    """The facade of the feat_cache families: diffusers' `enable_tiling(tile_sample_min_height,
    tile_sample_min_width, tile_sample_stride_height, tile_sample_stride_width)`, `enable_slicing()`,
    `clear_cache()`, and what pipelines read off the model (`z_dim`, `temperal_downsample`)."""

    def __init__(self, vae, *, dtype=None, memory_budget: int | None = None, mesh: Mesh | None = None):
        super().__init__(vae, dtype=dtype, memory_budget=memory_budget, mesh=mesh)
        self.z_dim = vae.z_dim
        self.temperal_downsample = list(vae.temperal_downsample)
        self.temperal_upsample = list(vae.temperal_upsample)

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_sample_stride_height", "tile_sample_stride_width")

    def clear_cache(self) -> None:
        """diffusers keeps its feat_cache on the model between calls; here each call carries its own. Nothing to clear."""


@functools.partial(jax.jit, static_argnames=("lay", "size", "patch"))
def _assemble(tiles, *, lay: tiling.TileLayout, size: tuple[int, int], patch):
    """Blended tiles cropped to `size`; for a decode (patch not None), unpatchified and clamped as diffusers does."""
    crops = tuple(tuple(tuple(calls[0].shape[3:]) for calls in row) for row in tiles)
    out = tiling.assemble(tiles, lay, crops)[:, :, :, : size[0], : size[1]]
    if patch is None:
        return out
    if patch:
        b, c, f, h, w = out.shape
        channels = c // (patch * patch)
        # diffusers' unpatchify: view (b, c, p, p, f, h, w), permute (0, 1, 4, 5, 3, 6, 2)
        out = out.reshape(b, channels, patch, patch, f, h, w).transpose(0, 1, 4, 5, 3, 6, 2)
        out = out.reshape(b, channels, f, h * patch, w * patch)
    return jnp.clip(out, -1.0, 1.0)

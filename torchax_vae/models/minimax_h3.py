"""MiniMax H3's video VAE: diffusers' AutoencoderKLMiniMaxH3 (the modular MiniMax H3 pipeline's `vae`).

How diffusers runs it, and how this adapter does:

- A causal 3-D CNN encoder and a non-causal ViT decoder (every latent voxel a
  token, full self-attention over a clip's tokens, with register tokens).
- Time in clips: `encode` cuts the video into `clip_length` (17) frame clips,
  the last one filled up by repeating its last frame, encodes each (5 latent
  frames), joins them and drops the last `token_drop` (3) latent frames: 17 n
  + 5 frames give 5 n + 2 latents. One frame is encoded alone (1 latent).
  `decode` decodes clips of 5 + 2 latent frames every 5 (the last latent
  repeated to fill the last clip), keeps each clip's first 17 frames, fades
  the 5 frames before them in (the tail of the clip before), and cuts the
  frames the repeated latents made. Here each clip is one program (all clips
  have one shape), and each clip's 17 frames are final once faded in: a
  decode stream hands them out clip by clip. Fewer than 3 latent frames make
  no clip; diffusers fails there, this adapter refuses them at the boundary.
- Sessions (torchax_vae/facade/session.py): a clip is decoded (encoded) when the
  chunk that brings its last latent (frame) comes; the rest is held on the
  device (`_Held`), and `finish()` runs the last clip once the end is known.
- Spatial tiling is on by default (the released frames are the tiled ones):
  tiles of `tile_sample_min_height` x `_width` pixels, as many as cover the
  frame with overlaps of at least `tile_sample_min_overlap_*`, the slack
  spread over the overlaps in steps of the spatial ratio; each tile blends
  into the next over its overlap (diffusers' `_split_tiles`, `_stitch_tiles`).
  All tiles have one shape. `disable_tiling()` gives "auto" (tile only what
  would not fit), as every family.
- Mixed precision as diffusers loads it (`_keep_in_fp32_modules`: the encoder,
  `quant_conv` and the decoder's norms and residual scales stay float32 under
  a bf16 `dtype`; lowering.jax_weights); each program casts its input to its
  first module's dtype, as diffusers' `encode` and `decode` do.
- The pipeline normalizes latents with the config's `latents_mean` /
  `latents_std`, and its pixels are ImageNet-normalized RGB, not [-1, 1]
  (`pixel_mean` / `pixel_std` here; the command and the service convert with
  them).
"""

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.minimax_h3", "MiniMaxH3VAE"] entry by looking the
# base class up in this module.
from diffusers import AutoencoderKLMiniMaxH3, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_minimax_h3 import MiniMaxH3VideoCausalConv3d

from torchax_vae.engine import memory
from torchax_vae.placement import tiling
from torchax_vae.facade.family import Family, of_config, with_config
from torchax_vae.engine.arrays import is_abstract
from torchax_vae.engine.sources import DeviceSource
from torchax_vae.engine.arrays import apply, join, run_out
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import tiling_switch
from torchax_vae.models import minimax_h3_tiles as tiles_of_clips
from torchax_vae.models.windows import WindowLowered

__all__ = ["MiniMaxH3", "MiniMaxH3VAE", "latent_shape", "video_channels"]

# ImageNet's RGB statistics, the pixel convention of MiniMax H3's pipeline (diffusers' class docstring)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def video_channels(config) -> int:
    return config.in_channels


def _ratios(config) -> tuple[int, int]:
    return math.prod(config.temporal_downsample_factors), math.prod(config.spatial_downsample_factors)


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, L, H, W] of a [B, C, frames, height, width] video: one latent for one frame, else 5 per
    clip of 17 frames less the 3 dropped (diffusers' `_encode`)."""
    batch, _, frames, height, width = video_shape
    temporal, spatial = _ratios(config)
    if frames == 1:
        latents = 1
    else:
        clips = -(-frames // config.clip_length)
        latents = clips * -(-config.clip_length // temporal) - config.token_drop
    return (batch, config.latent_channels, latents, height // spatial, width // spatial)


class MiniMaxH3Lowered(WindowLowered):
    """One encoder (+ quant_conv) or (post_quant_conv +) decoder call, its input cast to the first module's dtype."""

    def encode_step(self, weights, frames):
        return super().encode_step(weights, frames.astype(_dtype_of(weights["encoder"])))

    def decode_step(self, weights, latents):
        return super().decode_step(weights, latents.astype(_dtype_of(weights["post_quant_conv"])))


def _dtype_of(weights: dict):
    return next(iter(weights.values())).dtype


class MiniMaxH3(Family):
    """diffusers' `AutoencoderKLMiniMaxH3`, as diffusers runs it (the module docstring)."""

    model_class = AutoencoderKLMiniMaxH3
    marked = (MiniMaxH3VideoCausalConv3d,)
    casts_inputs = True
    settings = ("tile_sample_min_height", "tile_sample_min_width", "tile_sample_min_overlap_height",
                "tile_sample_min_overlap_width")
    pixel_mean, pixel_std = IMAGENET_MEAN, IMAGENET_STD

    def lower(self, vae):
        engine = self.engine
        return MiniMaxH3Lowered(vae, engine.placement.mesh, engine.placement.platform, self.marked,
                                self.spatial_compression_ratio)

    # ----- facts -----

    video_channels = of_config(video_channels)

    spatial_compression_ratio = of_config(lambda config: _ratios(config)[1])

    temporal_compression_ratio = of_config(lambda config: _ratios(config)[0])

    latent_shape = with_config(latent_shape)

    @property
    def _clip_tokens(self) -> tuple[int, int, int, int]:
        """(latents per clip, latents a clip overlaps the next by, frames before a clip's first kept one, frames
        the clips fade over): diffusers' derived geometry."""
        clip, ratio = self.config.clip_length, self.temporal_compression_ratio
        pre = (-clip) % ratio
        size = -(-clip // ratio)
        overlap = (-self.config.token_drop) % size
        return size, overlap, pre, max(overlap * ratio - pre, 0)

    def _decode_plan(self, latents: int) -> tuple[int, int]:
        """(clips, frames of the decoded video) for `latents` latent frames, as diffusers' `_decode` counts them."""
        size, overlap, pre, _ = self._clip_tokens
        drop, ratio = self.config.token_drop, self.temporal_compression_ratio
        pad = (-(latents + drop)) % size  # the last latent repeated to fill the last clip
        clips = (latents + drop + pad) // size - int(drop > 0)
        head = size * ratio - pre  # a clip's kept frames
        tail = max(min(2 * size, size + overlap) * ratio - size * ratio - pre, 0) if drop else 0  # the last clip's rest
        last = self.config.clip_length % ratio  # a clip's last latent covers this many frames (else `ratio`)
        cut = sum(last if last and (latents + k) % size == 0 else ratio for k in range(pad))  # the repeats' frames
        return clips, clips * head + tail - cut

    def check_latents(self, shape, name: str) -> None:
        if self._decode_plan(shape[2])[0] < 1:
            least = next(n for n in range(1, 64) if self._decode_plan(n)[0] >= 1)
            raise ValueError(f"{name} has {shape[2]} latent frames (shape {tuple(shape)}); AutoencoderKLMiniMaxH3 "
                             f"decodes clips of {self._clip_tokens[0] + self._clip_tokens[1]} and needs at least "
                             f"{least} (fewer make no clip, and diffusers fails on them)")

    def check_video(self, shape, name: str) -> None:
        ratio = self.spatial_compression_ratio
        if shape[3] % ratio or shape[4] % ratio:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); AutoencoderKLMiniMaxH3 encodes "
                             f"heights and widths divisible by {ratio}")

    def _statistics(self, latents: torch.Tensor):
        shape = (1, self.config.latent_channels, 1, 1, 1)
        return (torch.tensor(self.config.latents_mean).view(shape).to(latents.device, latents.dtype),
                torch.tensor(self.config.latents_std).view(shape).to(latents.device, latents.dtype))

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return (latents - mean) / std

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        mean, std = self._statistics(latents)
        return latents * std + mean  # as MiniMax H3's decode step

    # ----- encode / decode -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        frames, clip = source.shape[2], self.config.clip_length
        if frames == 1:
            return self._clip("encode", source, (0, 1), tiled)
        return apply(_join_and_drop, self._encoded_clips(source, -(-frames // clip), tiled), drop=self.config.token_drop)

    def _encoded_clips(self, source, count: int, tiled) -> list:
        """The source's first `count` clips encoded (clip_length frames each, the last frame repeated past the end):
        the encode loop, which `encode` and an encode session share."""
        clip = self.config.clip_length
        return [self._clip("encode", source, (k * clip, k * clip + clip), tiled) for k in range(count)]

    def decode_chunks(self, source, tiled: bool | None = None):
        """One chunk per clip (its kept frames, faded in from the clip before), then the last clip's tail."""
        clips, left = self._decode_plan(source.shape[2])
        before, left = yield from self._decode_clips(source, range(clips), left, None, 0, tiled)
        if before is not None and left > 0:
            yield apply(_frames, before, start=0, stop=min(left, before.shape[2]))

    def _decode_clips(self, source, clips, left: int, before, base: int, tiled):
        """Clips `clips` (numbered in the whole video; the source holds its latents from latent `base` on): each
        one's kept frames, faded in from the clip before, at most `left` frames in all. Returns (the last clip's
        tail, the frames still to come)."""
        size, overlap, pre, fade = self._clip_tokens
        ratio, drop = self.temporal_compression_ratio, self.config.token_drop
        for i in clips:
            start = i * size - base
            out = self._clip("decode", source, (start, start + size + overlap), tiled)
            head = apply(_frames, out, start=pre, stop=size * ratio)
            if before is not None:
                head = apply(tiling.blend, before, head, extent=fade, axis=2)
            keep = min(left, head.shape[2])
            if keep > 0:
                yield head if keep == head.shape[2] else apply(_frames, head, start=0, stop=keep)
            left -= keep
            if drop > 0:
                before = apply(_frames, out, start=size * ratio + pre, stop=2 * size * ratio)
        return before, left

    # ----- sessions: clips decoded (or encoded) as soon as all their latents (frames) have come -----

    carries_state = True
    holds_back = True
    session_tiles = True

    def encode_ranges(self, frames: int) -> list[tuple[int, int]]:
        """The encoder's clips (one frame is encoded alone)."""
        clip = self.config.clip_length
        return [(start, min(start + clip, frames)) for start in range(0, frames, clip)]

    def session_step(self, source, state, kind: str = "decode"):
        """The clips a session's chunk completes; what they leave (the latents or frames of the next clip, the
        last clip's tail, its moments) is held on the device for the next chunk or `session_finish`."""
        held = source.take((0, source.shape[2]))
        state = _Held(held) if state is None else state.with_chunk(held)
        source = DeviceSource(state.held, state.held.dtype, self.engine.placement)
        if kind == "decode":
            size, overlap = self._clip_tokens[:2]
            ready = range(state.done, max(state.done, (state.total - overlap) // size))
            # a clip whose latents have all come keeps all its frames, whatever the video's length (_decode_plan)
            outputs, (before, _) = run_out(
                self._decode_clips(source, ready, math.inf, state.before, state.base, None))
            state = state.moved(len(ready), len(ready) * size, before=before)
        else:
            clip = self.config.clip_length
            ready = state.held.shape[2] // clip
            outputs = [] if state.before is None or not ready else [state.before]
            moments = self._encoded_clips(source, ready, None)
            outputs += moments[:-1]
            state = state.moved(ready, ready * clip, before=moments[-1] if moments else state.before)
        return (apply(join, outputs, axis=2) if outputs else None), state

    def session_finish(self, state, kind: str = "decode"):
        """The rest of the video at its end: the clips its last latents make (the last latent repeated to fill
        the last clip, as diffusers' decode) and the last clip's tail; or, encoding, the last clip's moments with
        diffusers' dropped latents cut."""
        shape = (*state.held.shape[:2], state.total, *state.held.shape[3:])
        source = DeviceSource(state.held, state.held.dtype, self.engine.placement)
        if kind == "encode":
            if state.total == 1:
                return self._clip("encode", source, (0, 1), None)
            moments = [] if state.before is None else [state.before]
            if state.held.shape[2]:
                moments += self._encoded_clips(source, 1, None)
            return apply(_join_and_drop, moments, drop=self.config.token_drop)
        self.check_latents(shape, "the session's latents")
        clips, frames = self._decode_plan(state.total)
        size, _, pre, _ = self._clip_tokens
        left = frames - state.done * (size * self.temporal_compression_ratio - pre)
        outputs, (before, left) = run_out(
            self._decode_clips(source, range(state.done, clips), left, state.before, state.base, None))
        if before is not None and left > 0:
            outputs.append(apply(_frames, before, start=0, stop=min(left, before.shape[2])))
        return apply(join, outputs, axis=2) if outputs else None

    def _clip(self, kind: str, source, span, tiled) -> jax.Array:
        """One clip (frames `span` of the source, the last frame repeated past its end), encoded or decoded:
        tiled as the tiling mode (or `tiled`) says."""
        ratio = self.spatial_compression_ratio
        scale = 1 if kind == "encode" else ratio
        height, width = source.shape[3] * scale, source.shape[4] * scale  # in pixels
        tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        if tiled is None:
            need = functools.partial(self._untiled_bytes, kind, source, span)
            name = "encoder" if kind == "encode" else "decoder"
            tiled = (height > tile[0] or width > tile[1]) and self.engine.should_tile(
                name, need, source.shape, (tile[0] // scale, tile[1] // scale))
        if not tiled:
            out = self._call(kind, source, span)
            self.engine.ran_batch(out)
            return out
        rows = tiles_of_clips.split_tiles(height, tile[0], self.tile_sample_min_overlap_height, ratio)
        cols = tiles_of_clips.split_tiles(width, tile[1], self.tile_sample_min_overlap_width, ratio)
        tiles = []
        for row in rows[0]:
            tiles.append([])
            for col in cols[0]:
                block = (row // scale, col // scale, rows[1] // scale, cols[1] // scale)
                tiles[-1].append(self._call(kind, source, span, block))
                self.engine.ran_batch(tiles[-1][-1])
        unit = ratio if kind == "encode" else 1  # the overlaps are in pixels; an encoder's tiles are latents
        return apply(tiles_of_clips.stitch, tiles, rows=tuple(o // unit for o in rows[2]), cols=tuple(o // unit for o in cols[2]))

    def _call(self, kind: str, source, span, block=None):
        """One encoder or decoder call on frames `span` (repeating the last past the end) of the source, or of a
        (row, col, height, width) block of it."""
        start, end = span
        have = min(end, source.shape[2])
        chunk = source.take((start, have)) if block is None else source.take((start, have), block[::2], block[1::2])
        if have < end and is_abstract(chunk):  # shapes only (precompile, plan): placed as a real clip would be
            shape = (*chunk.shape[:2], end - start, *chunk.shape[3:])
            chunk = jax.ShapeDtypeStruct(shape, chunk.dtype, sharding=self.engine.placement.activation(shape))
        elif have < end:
            chunk = _repeat_last(chunk, count=end - have)
        encode = kind == "encode"
        children = ("encoder", "quant_conv") if encode else ("post_quant_conv", "decoder")
        weights = {k: self.engine.weights[k] for k in children}
        name = ("encoder" if encode else "decoder") + ("" if block is None else "/tile")
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        return self.engine.programs.run(name, step, weights, chunk)

    def _untiled_bytes(self, kind: str, source, span) -> int:
        """Device memory of the untiled call on one clip: XLA's temp + argument + output bytes."""
        with self.engine.programs.recording() as used:
            self._call(kind, self.engine.shapes(source.shape), span)
        return memory.call_bytes(used)


class MiniMaxH3VAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLMiniMaxH3` (the module docstring)."""

    family = MiniMaxH3

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        # diffusers' derived geometry of the instance (its own attributes there)
        for name in ("temporal_compression_ratio", "frame_pre_padding", "tokens_chunk_size", "token_overlap",
                     "frame_overlap"):
            setattr(self, name, getattr(vae, name))

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_sample_min_overlap_height", "tile_sample_min_overlap_width")

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode")


def _frames(video, *, start: int, stop: int):
    return video[:, :, start:stop]


@functools.partial(jax.jit, static_argnames=("count",))
def _repeat_last(video, *, count: int):
    return jnp.concatenate([video, jnp.repeat(video[:, :, -1:], count, axis=2)], axis=2)


def _join_and_drop(moments, *, drop: int):
    joined = jnp.concatenate(moments, axis=2)
    return joined[:, :, : joined.shape[2] - drop]


@dataclasses.dataclass(frozen=True)
class _Held:
    """A MiniMax H3 session's state: the latents (or frames) from latent (frame) `base` on, not yet in a finished
    clip; the clips done; the last clip's tail (encoding: its moments), held back; the latents (frames) so far."""

    held: jax.Array
    base: int = 0
    done: int = 0
    before: jax.Array | None = None
    total: int = 0

    def __post_init__(self):
        if not self.total:
            object.__setattr__(self, "total", self.held.shape[2])

    def with_chunk(self, chunk) -> "_Held":
        return dataclasses.replace(self, held=apply(join, [self.held, chunk], axis=2),
                                   total=self.total + chunk.shape[2])

    def moved(self, clips: int, by: int, before) -> "_Held":
        """After `clips` more clips, their first `by` latents (frames) no longer held."""
        return dataclasses.replace(self, held=apply(_frames, self.held, start=by, stop=self.held.shape[2]),
                                   base=self.base + by, done=self.done + clips, before=before)


# A pytree (its arrays data, its counters part of the structure), so that sessions at the same clip stack their
# held latents on the batch axis (torchax_vae/facade/session_batch.py) and sessions elsewhere never batch together.
jax.tree_util.register_dataclass(_Held, data_fields=["held", "before"], meta_fields=["base", "done", "total"])
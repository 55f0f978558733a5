"""Kandinsky 6's video super-resolution VAE: diffusers' Kandinsky6SRVAE (Kandinsky6SRPipeline's `vae`).

How diffusers runs it, and how this adapter does:

- A causal 3-D encoder and decoder. `encode` cuts the video into segments of
  17 frames, then 16 (`SEGMENT_FRAMES` + the first), `decode` the latents into
  5, then 4 (16 frames' worth); each segment is one encoder or decoder call,
  and every causal convolution carries the frames the next segment's first
  window needs in a `cache` dict that diffusers mutates in place
  (`{"padding": None}` for a first segment; its spatial norms' `{"is_first_segment":
  True}` likewise).
- Here each call is a jitted program of (weights, frames, state); `state` is
  None for a first segment, else the carried paddings in `make_cache()`'s
  order. The program builds the dict from them inside the trace (a later
  segment: every padding given, every spatial norm past its first segment),
  runs diffusers' own encoder or decoder on it, and returns the output and the
  paddings it left behind, which stay on the device for the next segment. The
  paddings have one shape for every whole segment after the first, so a video
  of any length compiles a first, a steady and a last-segment program per
  resolution and direction, whatever its length.
- Each decoded segment is final when it leaves its program: a decode stream
  hands the frames out segment by segment, and a session carries the
  paddings from one chunk to the next (any latent chunking decodes the same
  frames; an encode session takes 1 + 4k frames first, then multiples of 4, so
  that the encoder's temporal pooling pairs the frames as in one pass), each
  chunk cut into segments no longer than diffusers' so that a session of any
  chunking compiles a bounded set of programs.
- No tiling and no slicing: diffusers' class has neither (its pipeline tiles
  the video itself, and each tile is a call of its own).
- Videos have 1 + 4k frames (the pipeline's `check_inputs`; diffusers' encoder
  fails on some others) and heights and widths that are multiples of the
  spatial ratio (pixel unshuffle at each level).
- The pipeline scales latents by `scaling_factor` alone; its pixels are
  `value / 128 * 127.5`-rescaled around [-1, 1] ("trained on pixels / 128 - 1"):
  `pixel_mean` = `pixel_std` = 128 / 255 here, which the command, the service
  and uint8 streams convert with.
"""

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.kandinsky6_sr", "Kandinsky6SRVAEModel"] entry by
# looking the base class up in this module.
from diffusers import Kandinsky6SRVAE, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kandinsky6_sr import (SEGMENT_FRAMES, Kandinsky6SRCausalConv3d,
                                                                     Kandinsky6SRDownsample, Kandinsky6SRResnetBlock3D,
                                                                     Kandinsky6SRUpsample)

from torchax_vae import patches
from torchax_vae.facade.family import Family, config_value, whole_groups
from torchax_vae.engine.lowering import Lowered
from torchax_vae.engine.arrays import apply, join, run_out
from torchax_vae.facade.vae import TorchaxVAE

__all__ = ["Kandinsky6SR", "Kandinsky6SRVAEModel", "decode_segments", "encode_segments"]

# The pipeline's pixels: value = pixel * 255 / 128 - 1 (Kandinsky6SRPipeline.encode_video and decode_latents)
PIXEL = (128 / 255,) * 3
NO_TILING = "Kandinsky6SRVAE has no tiling: its pipeline tiles the video itself and decodes each tile whole"


def encode_segments(frames: int) -> list[tuple[int, int]]:
    """The (start, end) frame ranges diffusers' `encode` passes to one encoder call each: 17, then 16 at a time."""
    return _segments(frames, SEGMENT_FRAMES)


def decode_segments(latents: int, temporal_ratio: int) -> list[tuple[int, int]]:
    """The (start, end) latent ranges diffusers' `decode` passes to one decoder call each: 16 frames' worth (and
    the first latent) first, then 16 frames' worth at a time."""
    return _segments(latents, SEGMENT_FRAMES // temporal_ratio)


def _segments(length: int, size: int) -> list[tuple[int, int]]:
    """Ranges of `size` covering `length`, the first one longer by one (the leading frame), the last what is left."""
    ends = [min(end, length) for end in range(size + 1, length + size, size)] if length > 1 else [length]
    return list(zip([0, *ends[:-1]], ends))


def _paddings(cache) -> list:
    """The frames a cache carries, in `make_cache()`'s order (its dicts' and lists' order)."""
    if isinstance(cache, dict):
        if "padding" in cache:
            return [cache["padding"]]
        return [p for value in cache.values() for p in _paddings(value)]
    if isinstance(cache, list):
        return [p for value in cache for p in _paddings(value)]
    return []  # a spatial norm's is_first_segment


def _restore(cache, paddings) -> None:
    """Fills a fresh `make_cache()` with a later segment's state: the carried paddings in order, and every spatial
    norm past its first segment."""
    if isinstance(cache, dict):
        if "padding" in cache:
            cache["padding"] = next(paddings)
        elif "is_first_segment" in cache:
            cache["is_first_segment"] = False
        else:
            for value in cache.values():
                _restore(value, paddings)
    elif isinstance(cache, list):
        for value in cache:
            _restore(value, paddings)


class Kandinsky6SRLowered(Lowered):
    """One encoder or decoder call of a segment, pure in JAX arrays: (weights, frames, state) -> (output, state)."""

    def encode_step(self, weights, frames, state=None):
        return self._segment("encoder", weights, frames, state, self.spatial_ratio)

    def decode_step(self, weights, latents, state=None):
        return self._segment("decoder", weights, latents, state, 1)

    def _segment(self, child: str, weights, x, state, ratio: int):
        dtype = x.dtype
        weights, x, state = self.env.j2t_iso((weights, x, state))
        with self._tracing(dtype, x.shape, ratio):
            cache = getattr(self.model, child).make_cache()
            if state is not None:
                _restore(cache, iter(state))
            out = self._call(child, weights, x, cache)
            carried = tuple(patches.sharding_marks.mark(p) for p in _paddings(cache))
        return self.env.t2j_iso((out, carried))


class Kandinsky6SR(Family):
    """diffusers' `Kandinsky6SRVAE`, as diffusers runs it (the module docstring)."""

    model_class = Kandinsky6SRVAE
    marked = (Kandinsky6SRCausalConv3d, Kandinsky6SRResnetBlock3D, Kandinsky6SRDownsample, Kandinsky6SRUpsample)
    pixel_mean = pixel_std = PIXEL

    def lower(self, vae):
        return self.lowering_on(Kandinsky6SRLowered, vae, self.marked, self.spatial_compression_ratio)

    # ----- facts -----

    video_channels = config_value("in_channels")

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** (len(self.config.encoder_block_out_channels) - 1)

    temporal_compression_ratio = config_value("temporal_compression_ratio")

    def latent_shape(self, video_shape) -> tuple[int, ...]:
        batch, _, frames, height, width = video_shape
        spatial, temporal = self.spatial_compression_ratio, self.temporal_compression_ratio
        return (batch, self.latent_channels, 1 + (frames - 1) // temporal, height // spatial, width // spatial)

    def check_video(self, shape, name: str) -> None:
        spatial = self.spatial_compression_ratio
        if shape[3] % spatial or shape[4] % spatial:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); Kandinsky6SRVAE encodes "
                             f"heights and widths that are multiples of {spatial}")

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor  # Kandinsky6SRPipeline.encode_video

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # Kandinsky6SRPipeline.decode_latents

    # ----- encode / decode: segments carrying their paddings -----

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        """The whole video's segments (a session's chunks follow `session_chunks` instead)."""
        if tiled:
            raise NotImplementedError(NO_TILING)
        frames, temporal = source.shape[2], self.temporal_compression_ratio
        if (frames - 1) % temporal:  # before any program runs
            raise ValueError(f"the video has {frames} frames (shape {tuple(source.shape)}); Kandinsky6SRVAE encodes "
                             f"1 + {temporal}k frames (1, {1 + temporal}, {1 + 2 * temporal}, ...), as its pipeline "
                             f"requires")
        moments, _ = run_out(self.chunk_loop("encode", source, self.call_ranges(source.shape[2], True, "encode"), None))
        return apply(join, moments, axis=2)

    def decode_chunks(self, source, tiled: bool | None = None):
        """One chunk per decoder segment (16 frames, the first 17), each final when its program ends."""
        if tiled:
            raise NotImplementedError(NO_TILING)
        return self.chunk_loop("decode", source, self.call_ranges(source.shape[2], True), None)

    def _segments(self, child: str, source, ranges, state=None):
        """The segments' calls in order, carrying the paddings on the device: a generator of their outputs, which
        returns the last state (a session's next)."""
        step = self.lowered.encode_step if child == "encoder" else self.lowered.decode_step
        weights = {child: self.engine.weights[child]}
        for start, end in ranges:
            program = child if state is None else f"{child}+cache"
            out, state = self.engine.programs.run(program, step, weights, source.take((start, end)), state)
            self.engine.ran_batch(out)
            yield out
        return state

    # ----- a session: latent chunks of any size; video chunks that pair frames as one pass does -----

    carries_state = True

    def session_chunks(self, frames: int, first: bool, kind: str = "decode") -> str | None:
        if kind == "decode":
            return None
        # the encoder's temporal pooling pairs frames (twice): a chunk must end where a pooled group does
        return whole_groups(frames, first, self.temporal_compression_ratio)

    def call_ranges(self, frames: int, first: bool, kind: str = "decode") -> list[tuple[int, int]]:
        """diffusers' segments (a first chunk as a whole call's; later ones in whole segments and the rest): whatever
        the chunking, programs of at most a segment's length, so a session compiles a bounded set of them."""
        ratio = self.temporal_compression_ratio
        if first:
            return decode_segments(frames, ratio) if kind == "decode" else encode_segments(frames)
        size = SEGMENT_FRAMES // ratio if kind == "decode" else SEGMENT_FRAMES
        return [(k, min(k + size, frames)) for k in range(0, frames, size)]

    def chunk_loop(self, kind: str, source, ranges, state):
        """The segments' calls, carrying the paddings."""
        return self._segments("decoder" if kind == "decode" else "encoder", source, ranges, state)


class Kandinsky6SRVAEModel(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `Kandinsky6SRVAE` (the module docstring)."""

    family = Kandinsky6SR

    def __init__(self, vae, **kwargs):
        super().__init__(vae, **kwargs)
        self.temporal_compression_ratio = vae.temporal_compression_ratio  # diffusers' attribute of the instance

    # What diffusers' class lacks, a TorchaxVAE lacks too (`hasattr` answers as for the wrapped class).
    diffusers_lacks = ("tiled_encode", "tiled_decode", "disable_tiling", "enable_slicing", "disable_slicing",
                       "use_tiling")

"""diffusers' frame-window VAEs: AutoencoderKLHunyuanVideo (and the LTX classes built the same way).

How diffusers runs them, and how these adapters do:

- They carry no cache between calls: one encoder or decoder call sees a
  whole clip. A video up to `tile_sample_min_num_frames` frames (its latents
  up to that over the temporal ratio) is one call; a longer one, with
  `use_framewise_encoding` / `use_framewise_decoding` (on by default), is cut
  into windows of that many frames plus one, every
  `tile_sample_stride_num_frames`; each window after the first drops its first
  output frame (the one it shares with the window before), fades in from the
  window before over the overlap (`blend_t`), and keeps a stride's worth.
- Here each call is one program of (weights, clip). Its shape is the window's,
  so the programs are bounded by the window settings, not the video's length:
  the full window and the shorter last windows (at most min_num_frames + 1
  shapes each way), and the whole-video shapes below one window. The
  windows are blended on the device (`Windows._blended`, one window at a time).
- Spatial tiling (`enable_tiling`, or "auto" when the untiled call would not
  fit): diffusers' tiled_encode/tiled_decode over each call's clip, each tile
  at its own exact shape (the mid block's attention sees the whole tile), and
  the blend of torchax_vae.placement.tiling.

What a family of this kind says (`Windows`' attributes and methods): its
diffusers class and lowering (`lowered_class`), which flag turns on framewise
encoding and which frame a later decoded window drops (diffusers' classes
differ), the arguments its decoder takes besides the latents
(`_decoder_args`: LTX's timestep and injected noise), and its channels,
ratios and latent scaling. `WindowVAE` is the facade such families share:
diffusers' `enable_tiling` arguments and `temporal_compression_ratio`.
"""

import functools

import jax

from torchax_vae.engine import memory
from torchax_vae.placement import tiling
from torchax_vae.facade.family import Family
from torchax_vae.engine.lowering import Lowered
from torchax_vae.engine.arrays import apply, join_chunks
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.facade.policy import tiling_switch


def windows(frames: int, size: int, stride: int) -> list[tuple[int, int]]:
    """The (start, end) frame ranges of diffusers' temporal tiling: `size` + 1 frames every `stride`."""
    return [(start, min(start + size + 1, frames)) for start in range(0, frames, stride)]


class WindowLowered(Lowered):
    """A frame-window VAE's call functions, pure in JAX arrays: one encoder or decoder call on a whole clip."""

    def encode_step(self, weights, frames, **options):
        """One encoder call (and quant_conv, where the model has one) on a clip: the posterior's moments.

        options: the encoder's Python arguments for this program (LTX-2's `causal`; part of its name).
        """
        dtype = frames.dtype
        weights, frames = self.env.j2t_iso((weights, frames))
        with self._tracing(dtype, frames.shape, self.spatial_ratio):
            h = self._call("encoder", weights, frames, **options)
            if getattr(self.model, "quant_conv", None) is not None:
                h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso(h)

    def decode_step(self, weights, latents, *extra, **options):
        """One decoder call (after post_quant_conv, where the model has one) on a latent clip; `extra`: the
        decoder's further arguments (LTX's timestep); options as `encode_step`'s."""
        dtype = latents.dtype
        weights, latents, extra = self.env.j2t_iso((weights, latents, extra))
        with self._tracing(dtype, latents.shape, 1):
            if getattr(self.model, "post_quant_conv", None) is not None:
                latents = self._call("post_quant_conv", weights, latents)
            out = self._call("decoder", weights, latents, *extra, **options)
        return self.env.t2j_iso(out)


class Windows(Family):
    """The shared part of the frame-window families (see the module docstring)."""

    lowered_class = WindowLowered
    frame_windows = True  # False: diffusers' class has no frame windows, every call sees the whole clip
    # diffusers' LTX classes test `use_framewise_decoding` in `_encode` too; HunyuanVideo its own flag
    encode_window_flag = "use_framewise_encoding"
    # the frame each decoded window after the first drops, the one it shares with the window before:
    # HunyuanVideo's first (decoded[:, :, 1:]), LTX's last (decoded[:, :, :-1])
    decode_window_drop = "first"
    settings = (
        "use_framewise_encoding", "use_framewise_decoding", "tile_sample_min_height", "tile_sample_min_width",
        "tile_sample_min_num_frames", "tile_sample_stride_height", "tile_sample_stride_width",
        "tile_sample_stride_num_frames",
    )

    def lower(self, vae):
        engine = self.engine
        return self.lowered_class(vae, engine.placement.mesh, engine.placement.platform, self.marked,
                                  self.spatial_compression_ratio)

    # ----- what the family says -----

    @property
    def temporal_compression_ratio(self) -> int:
        raise NotImplementedError

    def _decoder_args(self, chunk, **conditioning) -> tuple:
        """The decoder's arguments besides the latents for one call on `chunk` (a JAX array or its shape).

        conditioning: what `decode` was given besides the latents, for this sample or batch (LTX's timestep).
        """
        return ()

    def _program_options(self, kind: str, conditioning: dict) -> dict:
        """Python arguments of the encoder or decoder that change its program (LTX-2's `causal`), taken out of
        `conditioning`; each program's name says them. None: the model's defaults."""
        return {}

    def _check_clip(self, shape, name: str) -> None:
        """A whole-clip encoder's input: 1 + k x the temporal ratio frames, height and width divisible by the
        spatial ratio (what HunyuanVideo 1.5's, Cosmos's and EasyAnimate's encoders need; diffusers fails deep
        inside them otherwise). Families set `check_video = Windows._check_clip`."""
        temporal, spatial = self.temporal_compression_ratio, self.spatial_compression_ratio
        model = self.model_class.__name__
        if (shape[2] - 1) % temporal:
            raise ValueError(f"{name} has {shape[2]} frames (shape {tuple(shape)}); {model} encodes 1 + {temporal}k "
                             "frames")
        if shape[3] % spatial or shape[4] % spatial:
            raise ValueError(f"{name} is {shape[3]}x{shape[4]} (shape {tuple(shape)}); {model} needs a height and "
                             f"width divisible by {spatial}")

    # ----- encode / decode -----

    def _tile_threshold(self, kind: str) -> tuple[int, int]:
        """The input height and width above which diffusers tiles a call of `kind` (when tiling is on)."""
        sample = (self.tile_sample_min_height, self.tile_sample_min_width)
        return sample if kind == "encode" else tuple(t // self.spatial_compression_ratio for t in sample)

    def _tile_layout(self, kind: str, size: tuple[int, int]) -> tiling.TileLayout:
        """diffusers' tiles for a call of `kind` whose output is `size` (height, width): where they start, how their
        outputs blend and what they keep."""
        ratio = self.spatial_compression_ratio
        sample = (self.tile_sample_min_height, self.tile_sample_min_width)
        stride = (self.tile_sample_stride_height, self.tile_sample_stride_width)
        if kind == "encode":
            return tiling.strided(*sample, *stride, out_scale=ratio)
        return tiling.strided(sample[0] // ratio, sample[1] // ratio, stride[0] // ratio, stride[1] // ratio,
                              out_scale=ratio, out_tile=sample, out_stride=stride)

    def encode(self, source, tiled: bool | None = None, **conditioning) -> jax.Array:
        frames = source.shape[2]
        if not self.frame_windows:
            return self._clip("encode", source, (0, frames), tiled, conditioning)
        if getattr(self, self.encode_window_flag) and frames > self.tile_sample_min_num_frames and tiled is None:
            spans = windows(frames, self.tile_sample_min_num_frames, self.tile_sample_stride_num_frames)
            ratio = self.temporal_compression_ratio
            outs = (self._clip("encode", source, span, tiled, conditioning) for span in spans)
            stride, size = self.tile_sample_stride_num_frames // ratio, self.tile_sample_min_num_frames // ratio
            kept = self._blended(outs, extent=size - stride, stride=stride, frames=(frames - 1) // ratio + 1)
            return join_chunks(kept, axis=2)
        return self._clip("encode", source, (0, frames), tiled, conditioning)

    def decode_chunks(self, source, tiled: bool | None = None, **conditioning):
        """One chunk per frame window (a window's kept frames are final once the next has blended into them);
        one chunk for a video of one window, or a family whose calls see the whole clip."""
        frames = source.shape[2]
        if not (self.frame_windows and self.use_framewise_decoding and tiled is None):
            yield self._clip("decode", source, (0, frames), tiled, conditioning)
            return
        ratio = self.temporal_compression_ratio
        size, stride = self.tile_sample_min_num_frames // ratio, self.tile_sample_stride_num_frames // ratio
        if frames <= size:
            yield self._clip("decode", source, (0, frames), tiled, conditioning)
            return
        sample_stride = self.tile_sample_stride_num_frames
        outs = (self._clip("decode", source, span, tiled, conditioning) for span in windows(frames, size, stride))
        yield from self._blended(outs, extent=self.tile_sample_min_num_frames - sample_stride, stride=sample_stride,
                                 frames=(frames - 1) * ratio + 1, drop=self.decode_window_drop)

    @staticmethod
    def _blended(outs, *, extent: int, stride: int, frames: int, drop: str = "first"):
        """diffusers' temporal tiling (`blend_t`, HunyuanVideo's and LTX's `_encode`/`_decode` windows): the windows
        `outs` blended in order, each after the first losing the frame it shares with the one before (its first, or
        with `drop="last"` its last) and fading in from it over `extent` frames. Yields each window's kept frames
        (the first stride + 1, then stride; `frames` in all) as soon as it is blended: the blend writes the later
        window's head, so a window's kept frames are final then. What encode joins and a decode stream hands out."""
        trim = _drop_first if drop == "first" else _drop_last
        before = None
        for i, out in enumerate(outs):
            if before is not None:
                out = apply(tiling.blend, before, apply(trim, out), extent=extent, axis=2)
            keep = min(frames, stride + (i == 0), out.shape[2])
            if keep > 0:
                yield apply(_head, out, count=keep)
            frames -= keep
            before = out  # what the next window fades in from

    def _clip(self, kind: str, source, span, tiled, conditioning=None) -> jax.Array:
        """One clip (frames `span`) encoded or decoded: one call, or tiled as the tiling mode (or `tiled`) says."""
        height, width = source.shape[3:]
        tile = self._tile_threshold(kind)
        if tiled is None:
            need = functools.partial(self._untiled_bytes, kind, source, span, conditioning)
            name = "encoder" if kind == "encode" else "decoder"
            tiled = (height > tile[0] or width > tile[1]) and self.engine.should_tile(name, need, source.shape, tile)
        if tiled:
            return self._tiled(kind, source, span, conditioning)
        out = self._call(kind, source, span, conditioning=conditioning)
        self.engine.ran_batch(out)
        return out

    def _call(self, kind: str, source, span, block=None, conditioning=None):
        """One encoder or decoder call on frames `span` of the source (or of a (row, col, height, width) block)."""
        encode = kind == "encode"
        chunk = source.take(span) if block is None else source.take(span, block[::2], block[1::2])
        children = ("encoder", "quant_conv") if encode else ("decoder", "post_quant_conv")
        weights = {k: self.engine.weights[k] for k in children if k in self.engine.weights}
        conditioning = dict(conditioning or {})
        options = self._program_options(kind, conditioning)
        name = ("encoder" if encode else "decoder") + ("" if block is None else "/tile")
        name += "".join(f"+{key}={value}" for key, value in sorted(options.items()))
        step = self.lowered.encode_step if encode else self.lowered.decode_step
        step = functools.partial(step, **options) if options else step
        if encode:
            return self.engine.programs.run(name, step, weights, chunk)
        extra = self._decoder_args(chunk, **conditioning)
        return self.engine.programs.run(name, step, weights, chunk, *extra)

    def _untiled_bytes(self, kind: str, source, span, conditioning) -> int:
        """Device memory of the untiled call on a clip of `span`: XLA's temp + argument + output bytes."""
        shapes = self.engine.shapes(source.shape)
        with self.engine.programs.recording() as used:
            self._call(kind, shapes, span, conditioning=conditioning)
        return memory.call_bytes(used)

    def _tiled(self, kind: str, source, span, conditioning=None) -> jax.Array:
        """diffusers' tiled_encode / tiled_decode of one clip: tiles at their own shapes, blended, cropped."""
        ratio = self.spatial_compression_ratio
        height, width = source.shape[3:]
        size = (height // ratio, width // ratio) if kind == "encode" else (height * ratio, width * ratio)
        lay = self._tile_layout(kind, size)
        tiles = []
        for row in lay.tiles(height, width):
            tiles.append([])
            for t in row:
                block = (t.row, t.col, t.valid_height, t.valid_width)
                tiles[-1].append([self._call(kind, source, span, block, conditioning)])
                self.engine.ran_batch(tiles[-1][-1])
        return apply(_assemble, tiles, lay=lay, size=size)


class WindowVAE(TorchaxVAE):
    """The facade of the frame-window families: diffusers' `enable_tiling(tile_sample_min_height,
    tile_sample_min_width, tile_sample_min_num_frames, tile_sample_stride_height, tile_sample_stride_width,
    tile_sample_stride_num_frames)`, framewise calls `use_framewise_encoding` / `use_framewise_decoding`,
    slicing `enable_slicing()`."""

    @property
    def temporal_compression_ratio(self) -> int:
        return self._family.temporal_compression_ratio

    enable_tiling = tiling_switch(
        "tile_sample_min_height", "tile_sample_min_width", "tile_sample_min_num_frames", "tile_sample_stride_height", "tile_sample_stride_width", "tile_sample_stride_num_frames")


def _drop_first(out):
    return out[:, :, 1:]


def _drop_last(out):
    return out[:, :, :-1]


def _head(out, *, count: int):
    return out[:, :, :count]


@functools.partial(jax.jit, static_argnames=("lay", "size"))
def _assemble(tiles, *, lay: tiling.TileLayout, size: tuple[int, int]):
    crops = tuple(tuple(tuple(calls[0].shape[3:]) for calls in row) for row in tiles)
    return tiling.assemble(tiles, lay, crops)[:, :, :, : size[0], : size[1]]

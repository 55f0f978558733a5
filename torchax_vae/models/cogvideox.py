"""The CogVideoX family: diffusers' AutoencoderKLCogVideoX.

What diffusers' CogVideoX VAE decides, as this adapter runs it: remainder-first
frame batches carrying a `conv_cache` (`frame_batches`), spatial tiling with
overlap factors (torchax_vae.placement.tiling, zero-padded uniform tiles through
torchax_vae/patches/tile_mask.py), one program per layer on CPU (torchax_vae.engine.staging, cut
at `STAGES`), the traced model (`LoweredVAE`), its patches
(torchax_vae.patches), the latent shape and the pipelines' latent scaling
(`scaling_factor`).
"""

import functools

import jax
import torch
# ModelMixin: diffusers loads a saved pipeline's ["torchax_vae.models.cogvideox", "CogVideoXVAE"] entry by
# looking the base class up in this module (pipelines.pipeline_loading_utils.get_class_obj_and_candidates).
from diffusers import AutoencoderKLCogVideoX, ModelMixin  # noqa: F401
from diffusers.models.autoencoders.autoencoder_kl_cogvideox import CogVideoXCausalConv3d, CogVideoXResnetBlock3D
from diffusers.models.downsampling import CogVideoXDownsample3D
from diffusers.models.upsampling import CogVideoXUpsample3D
from torch import nn

from torchax_vae.placement.backends import backend
from torchax_vae.engine import memory, staging
from torchax_vae.placement import tiling
from torchax_vae.facade.family import Family, of_config, with_config
from torchax_vae.engine.lowering import Lowered
from torchax_vae.patches.group_norm import TorchaxGroupNorm
from torchax_vae.patches.safe_conv3d import PlainConv3d
from torchax_vae.engine.arrays import apply, join
from torchax_vae.facade.vae import TorchaxVAE

# The layers whose activations get sharding marks on a mesh (torchax_vae/patches/sharding_marks.py): every convolution
# inside a CogVideoXCausalConv3d (a PlainConv3d after safe_conv3d), every GroupNorm, the samplers.
MARKED = (PlainConv3d, TorchaxGroupNorm, CogVideoXUpsample3D, CogVideoXDownsample3D)


def video_channels(config) -> int:
    return config.in_channels


def latent_shape(config, video_shape) -> tuple[int, ...]:
    """[B, latent_channels, F, H, W] of the latents of a [B, C, frames, height, width] video under `config`."""
    batch, _, frames, height, width = video_shape
    spatial = 2 ** (len(config.block_out_channels) - 1)
    temporal = config.temporal_compression_ratio
    return (batch, config.latent_channels, (frames - 1) // temporal + 1, height // spatial, width // spatial)


class CogVideoX(Family):
    """diffusers' `AutoencoderKLCogVideoX` (CogVideoX 2b/5b, 1.5), as diffusers runs it (`CogVideoXVAE` says how)."""

    model_class = AutoencoderKLCogVideoX
    pipeline_layout = "BFCHW"  # CogVideoX's transformer takes [B, F, C, H, W]
    marked = MARKED
    settings = ("uniform_tiles", "program_split", "num_sample_frames_batch_size", "num_latent_frames_batch_size",
                "tile_sample_min_height", "tile_sample_min_width", "tile_latent_min_height", "tile_latent_min_width",
                "tile_overlap_factor_height", "tile_overlap_factor_width")
    uniform_tiles = True  # (not diffusers' settings: these two are this package's)
    _split = "auto"

    def lower(self, vae):
        return LoweredVAE(vae, self.engine.placement.mesh, self.engine.placement.platform)

    # ----- the family's shapes and latent scaling -----

    video_channels = of_config(video_channels)

    @property
    def spatial_compression_ratio(self) -> int:
        return 2 ** (len(self.config.block_out_channels) - 1)

    latent_shape = with_config(latent_shape)

    def scale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * self.config.scaling_factor  # as CogVideoXVideoToVideoPipeline.prepare_latents

    def unscale_latents(self, latents: torch.Tensor) -> torch.Tensor:
        return latents / self.config.scaling_factor  # as CogVideoXPipeline.decode_latents

    @property
    def program_split(self) -> str:
        """"batch", "layer", or "auto" ("layer" on one CPU device and on GPUs, else "batch"): programs per frame batch."""
        return self._split

    @program_split.setter
    def program_split(self, split: str) -> None:
        if split not in ("batch", "layer", "auto"):
            raise ValueError(f"program_split must be 'batch', 'layer' or 'auto', got {split!r}")
        self._split = split

    @property
    def _layered(self) -> bool:
        if self._split == "auto":  # the backend table's choice (torchax_vae/placement/backends.py, with its reasons)
            row = backend(self.lowered.platform)
            # a mesh of CPU devices is for testing sharding: it keeps the batch programs an accelerator mesh runs
            return row.program_split == "layer" and not (row.cpu_kernels and self.engine.placement.mesh is not None)
        return self._split == "layer"

    def encode(self, source, tiled: bool | None = None) -> jax.Array:
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("encoder", self.lowered.encode_step, source, self.num_sample_frames_batch_size,
                         sample_tile, latent_tile, tiled)

    def decode_chunks(self, source, tiled: bool | None = None):
        """One chunk per decoder frame batch (diffusers' grouping: 2 latent frames, the remainder in the first)."""
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("decoder", self.lowered.decode_step, source, self.num_latent_frames_batch_size,
                         latent_tile, sample_tile, tiled, chunks=True)

    def _run(self, name, step, source, batch_size, in_tile, out_tile, tiled=None, chunks=False):
        """Frame-batched `step` over the source; tiled if `tiled`, or (None) as the tiling mode says for its size.
        The output joined, or with `chunks` a generator of each frame batch's (tiles blended)."""
        height, width = source.shape[3:]
        if tiled is None:
            need = functools.partial(self._untiled_bytes, name, step, source, batch_size)
            tiled = (height > in_tile[0] or width > in_tile[1]) and self.engine.should_tile(name, need, source.shape, in_tile)
        if tiled:
            overlap = (self.tile_overlap_factor_height, self.tile_overlap_factor_width)
            lay = tiling.layout(*in_tile, *out_tile, *overlap)
            batches = self._tiled(name, step, source, batch_size, lay)
        else:
            batches = self._frames(name, step, source, batch_size)
        return batches if chunks else apply(join, list(batches), axis=2)

    def _frames(self, name, step, source, batch_size, block=None, valid=None, conv_cache=None, first=None):
        """`step` over diffusers' frame batches, carrying conv_cache on the device: a generator of the batch
        outputs, which returns the last conv_cache (a session's next state).

        block: (row, col, height, width) of a tile to cut from each frame batch
        (default: the whole frame). valid: that tile's (height, width) inside the
        video when the block is a zero-padded full-size tile (torchax_vae/patches/tile_mask.py).
        conv_cache: a session's, from its chunk before; first: the frame batches (default: diffusers').
        """
        extra = ()
        if valid is not None:
            name = f"{name}/tile"
            extra = (source.indices(valid),)
        for start, end in first or frame_batches(source.shape[2], batch_size):
            if block is None:
                chunk = source.take((start, end))
            else:
                chunk = source.take((start, end), (block[0], block[2]), (block[1], block[3]))
            if self._layered:
                out, conv_cache = self._staged_batch(name, chunk, conv_cache, extra)
            else:
                program = name if conv_cache is None else f"{name}+conv_cache"
                out, conv_cache = self.engine.programs.run(program, step, self.engine.weights, chunk, conv_cache, *extra)
            self.engine.ran_batch(out)
            yield out
        return conv_cache

    # ----- a session: the first chunk sets diffusers' remainder, later chunks come in whole frame batches -----

    carries_state = True

    def session_chunks(self, frames: int, first: bool, kind: str = "decode") -> str | None:
        size = self._batch_size(kind)
        what = "latent frames" if kind == "decode" else "video frames"
        # diffusers' GroupNorm statistics span a frame batch: a session is exact when its chunks cut the video
        # where diffusers' batches do (the remainder in the first batch, then `size` frames each)
        if first and frames < size:
            return f"a first chunk of at least {size} {what}"
        if not first and frames % size:
            return f"later chunks of a multiple of {size} {what}"
        return None

    def call_ranges(self, frames: int, first: bool, kind: str = "decode") -> list[tuple[int, int]]:
        size = self._batch_size(kind)  # diffusers' frame batches, the remainder in the first
        return frame_batches(frames, size) if first else [(k, k + size) for k in range(0, frames, size)]

    def chunk_loop(self, kind: str, source, ranges, state):
        name, step = ("decoder", self.lowered.decode_step) if kind == "decode" else ("encoder", self.lowered.encode_step)
        return self._frames(name, step, source, self._batch_size(kind), conv_cache=state, first=ranges)

    def _batch_size(self, kind: str) -> int:
        return self.num_latent_frames_batch_size if kind == "decode" else self.num_sample_frames_batch_size

    def _staged_batch(self, name, chunk, conv_cache, extra):
        """One frame batch as one program per stage (torchax_vae/engine/staging.py); conv_cache is a list per stage."""
        role = name.partition("/")[0]
        step = self.lowered.encode_stage if role == "encoder" else self.lowered.decode_stage
        stages = self.lowered.stages[role]
        caches = conv_cache or [None] * len(stages)
        given = handed = None  # the previous top-level stage's output; the previous sub-stage's
        new_caches = []
        for stage, cache in zip(stages, caches):
            program = f"{name}/{stage.name}" + ("" if conv_cache is None else "+conv_cache")
            weights = self.lowered.stage_weights(role, stage, self.engine.weights)
            out, cache = self.engine.programs.run(program, functools.partial(step, stage), weights, chunk, cache, (given, handed), *extra)
            new_caches.append(cache)
            given, handed = (out, None) if stage.last_sub else (given, out)
        return given, new_caches

    def _tiled(self, name, step, source, batch_size, lay: tiling.TileLayout):
        """diffusers' tiled_encode/tiled_decode, the tiles blended on the device: a generator of frame batches.

        With uniform_tiles (the default) every tile runs through the same
        programs at the full tile size; otherwise each tile shape (interior,
        right, bottom, corner) has its own.
        """
        grid = lay.tiles(*source.shape[3:])
        if self.uniform_tiles:
            source.pad_to(grid[-1][0].row + lay.tile_height, grid[0][-1].col + lay.tile_width)

        def run(tile: tiling.Tile):
            if self.uniform_tiles:  # the full-size, zero-padded block, told its valid extent
                size, valid = (lay.tile_height, lay.tile_width), tile.valid
            else:  # the tile cut to its own size, as diffusers does
                size, valid = tile.valid, None
            return self._frames(name, step, source, batch_size, (tile.row, tile.col, *size), valid), size

        runs = [[run(tile) for tile in row] for row in grid]
        # a frame batch's tiles blended as soon as each tile has run it (every tile carries its own conv_cache)
        for outs in zip(*(batches for row in runs for batches, _ in row)):
            it = iter(outs)
            outputs, crops = [], []
            for tiles, row in zip(grid, runs):
                outputs.append([])
                crops.append([])
                for tile, (_, size) in zip(tiles, row):
                    out = next(it)
                    outputs[-1].append([out])
                    # the output diffusers' tile would have had
                    crops[-1].append(tuple(tiling.extent_at(v, n, o) for v, n, o in zip(tile.valid, size, out.shape[3:])))
            yield apply(tiling.assemble, outputs, lay=lay, crops=tuple(map(tuple, crops)))

    def _untiled_bytes(self, name, step, source, batch_size) -> int:
        """Device memory the untiled first frame batch needs (`memory.call_bytes`: the rule every family uses)."""
        first = frame_batches(source.shape[2], batch_size)[0]
        block = self.engine.shapes(source.shape).take(first)
        if self._layered:
            with self.engine.programs.recording() as used:
                _, caches = self._staged_batch(name, block, None, ())
            # the largest program with its inputs (the hand-over from the one before), and the new
            # conv_cache of every layer, which stays live from its program to the next frame batch
            carried = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(caches))
            return memory.call_bytes(used, carried)
        return memory.call_bytes([self.engine.programs.compile(name, step, self.engine.weights, block, None)])


class CogVideoXVAE(TorchaxVAE):
    """`TorchaxVAE` for diffusers' `AutoencoderKLCogVideoX` (CogVideoX 2b/5b, 1.5).

    The PyTorch module passed in is left untouched and keeps working: its weights
    are copied to the JAX device, and a private, storage-less copy of its module
    tree (with the patches in `torchax_vae.patches`) is what gets traced. Each
    encoder or decoder frame batch runs as jitted programs compiled once per
    input shape; the conv_cache stays on the device between frame batches.

    How a frame batch is split into programs (`program_split`): "batch", one
    program for the whole encoder or decoder; "layer", a chain of programs, one
    per resnet convolution (with the norm before it), sampler and top-level
    layer (`torchax_vae.engine.staging`), which bounds what one program holds (a
    480x720 decoder batch: 7.7 GB of XLA temp memory instead of 48); "auto",
    the default: "layer" on a CPU device, where it is also faster, and on GPUs,
    where it is what makes sharding save memory; "batch" on TPUs (faster to
    compile) and on meshes of CPU devices.

    Tiling has three modes (`tiling_mode`): "on" (`enable_tiling()`, or the
    wrapped model had it on), "off" (`disable_tiling()`), and "auto", the default:
    an input larger than one tile is tiled when its untiled first frame batch
    would need more memory than is free (XLA's temp + output bytes; with
    "layer" programs, of the largest program with its inputs).
    With `uniform_tiles` (default True) the short right, bottom and corner
    tiles run zero-padded through the interior tile's programs (two programs
    per tiled call instead of up to eight, at the price of computing the
    padding); set it False to compile one program per tile shape instead.

    Args:
        vae (`AutoencoderKLCogVideoX`): the model to run.
        dtype (`torch.dtype`, *optional*): compute dtype; defaults to the model's.
        memory_budget (`int`, *optional*): bytes the "auto" tiling mode lets one
            program use (per device); by default what the device reports free
            (`memory_stats()`), or on CPU the host's available memory.
        mesh (`jax.sharding.Mesh`, *optional*): run on all its devices, axes ('dp', 'tp')
            (`torchax_vae.make_mesh()`): weights replicated, activations split on
            their width axis (batch over 'dp' when it divides). Under
            `jax.distributed` a mesh over every process's devices; each process
            then calls encode/decode with the same input and gets the whole result.
    """

    family = CogVideoX

    def enable_tiling(
        self,
        tile_sample_min_height: int | None = None,
        tile_sample_min_width: int | None = None,
        tile_overlap_factor_height: float | None = None,
        tile_overlap_factor_width: float | None = None,
    ) -> None:
        """Tiled encode and decode (mode "on"), with the same arguments and meaning as diffusers'."""
        self.tiling_mode = "on"
        self.tile_sample_min_height = tile_sample_min_height or self.tile_sample_min_height
        self.tile_sample_min_width = tile_sample_min_width or self.tile_sample_min_width
        factor = 2 ** (len(self.config.block_out_channels) - 1)
        self.tile_latent_min_height = int(self.tile_sample_min_height / factor)
        self.tile_latent_min_width = int(self.tile_sample_min_width / factor)
        self.tile_overlap_factor_height = tile_overlap_factor_height or self.tile_overlap_factor_height
        self.tile_overlap_factor_width = tile_overlap_factor_width or self.tile_overlap_factor_width


# ----- frame batches, exactly as diffusers' AutoencoderKLCogVideoX._encode/_decode slice time -----
# GroupNorm statistics span the frames of one call, so the grouping of frames
# into calls changes the result: it must match diffusers', not merely be causal.
# The first batch takes the remainder (num_frames % batch_size) on top of a full
# batch; the rest are full batches that continue from the carried conv_cache.


def frame_batches(num_frames: int, batch_size: int) -> list[tuple[int, int]]:
    """The (start, end) frame ranges diffusers passes to one encoder/decoder call each."""
    num_batches = max(num_frames // batch_size, 1)
    remaining = num_frames % batch_size
    ranges = []
    for i in range(num_batches):
        start = batch_size * i + (0 if i == 0 else remaining)
        end = min(batch_size * (i + 1) + remaining, num_frames)
        ranges.append((start, end))
    return ranges


# Layer programs (torchax_vae/engine/staging.py): resnet blocks run as one program per convolution.
STAGES = staging.Split(blocks=(CogVideoXResnetBlock3D,), convs=(CogVideoXCausalConv3d, nn.Conv3d, nn.Conv2d))


class LoweredVAE(Lowered):
    """An AutoencoderKLCogVideoX's JAX step functions, per frame batch or per stage (`Lowered`'s copy and trace)."""

    # per-frame convolutions in fp32 too: CogVideoX's layer programs run faster with them on CPU
    frame_conv_in_fp32 = True

    def __init__(self, vae: nn.Module, mesh=None, platform: str | None = None):
        super().__init__(vae, mesh, platform, MARKED, spatial_ratio=2 ** (len(vae.config.block_out_channels) - 1))
        # stage modules of the encoder and decoder, for one program per block (torchax_vae/engine/staging.py)
        self.stages = {role: staging.install(getattr(self.model, role), STAGES) for role in ("encoder", "decoder")}

    def _tile_tracing(self, dtype, valid, shape, ratio: int):
        """The trace context for a program on input of `shape` (N, C, T, H, W); valid: a tile's real extent."""
        extent = None if valid is None else (valid, tuple(shape[3:]))
        return self._tracing(dtype, shape, ratio, tile_extent=extent)

    def encode_step(self, weights, frames, conv_cache, valid=None):
        """One encoder call on a frame batch: (moments, conv_cache), as JAX arrays.

        With `valid` (int32 [height, width]), frames is a zero-padded tile of which
        only that top-left region is real (torchax_vae/patches/tile_mask.py).
        """
        dtype = frames.dtype
        weights, frames, conv_cache = self.env.j2t_iso((weights, frames, conv_cache))
        with self._tile_tracing(dtype, valid, frames.shape, self.spatial_ratio):
            h, conv_cache = self._call("encoder", weights, frames, conv_cache=conv_cache)
            if self.model.quant_conv is not None:
                h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso((h, conv_cache))

    def decode_step(self, weights, latents, conv_cache, valid=None):
        """One decoder call on a latent frame batch: (frames, conv_cache), as JAX arrays; `valid` as above."""
        dtype = latents.dtype
        weights, latents, conv_cache = self.env.j2t_iso((weights, latents, conv_cache))
        with self._tile_tracing(dtype, valid, latents.shape, 1):
            if self.model.post_quant_conv is not None:
                latents = self._call("post_quant_conv", weights, latents)
            frames, conv_cache = self._call("decoder", weights, latents, conv_cache=conv_cache)
        return self.env.t2j_iso((frames, conv_cache))

    # ----- one program per stage (torchax_vae/engine/staging.py) -----

    def stage_weights(self, role: str, stage: staging.Stage, weights) -> dict:
        """The weights a stage's program reads: its top-level stage module's (named relative to it), and the quant conv."""
        subset = {role: staging.weights_of(stage.path, weights[role])}
        for child in ("post_quant_conv",) if role == "decoder" else ("quant_conv",):
            if child in weights:
                subset[child] = weights[child]
        return subset

    def encode_stage(self, stage, weights, frames, conv_cache, given, valid=None):
        """One stage of one encoder call: (its output, its conv_cache); given = (previous stage's, sub-stage's output)."""
        dtype = frames.dtype
        weights, frames, conv_cache, given = self.env.j2t_iso((weights, frames, conv_cache, given))
        weights = {**weights, "encoder": staging.rooted(stage.path, weights["encoder"])}
        stages = self.stages["encoder"]
        with self._tile_tracing(dtype, valid, frames.shape, self.spatial_ratio):
            forward = functools.partial(self._call, "encoder", weights, frames, conv_cache=None)
            h, conv_cache = staging.run(stages, stage, *given, conv_cache, forward)
            if stage == stages[-1] and self.model.quant_conv is not None:
                h = self._call("quant_conv", weights, h)
        return self.env.t2j_iso((h, conv_cache))

    def decode_stage(self, stage, weights, latents, conv_cache, given, valid=None):
        """One stage of one decoder call: (its output, its conv_cache); given = (previous stage's, sub-stage's output)."""
        dtype = latents.dtype
        weights, latents, conv_cache, given = self.env.j2t_iso((weights, latents, conv_cache, given))
        weights = {**weights, "decoder": staging.rooted(stage.path, weights["decoder"])}
        with self._tile_tracing(dtype, valid, latents.shape, 1):
            if self.model.post_quant_conv is not None:  # the decoder's zq: every stage's spatial norms read it
                latents = self._call("post_quant_conv", weights, latents)
            forward = functools.partial(self._call, "decoder", weights, latents, conv_cache=None)
            h, conv_cache = staging.run(self.stages["decoder"], stage, *given, conv_cache, forward)
        return self.env.t2j_iso((h, conv_cache))

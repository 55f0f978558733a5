"""TorchaxVAE: diffusers' AutoencoderKLCogVideoX, run on JAX through torchax, with its interface."""

import dataclasses
import functools
import logging

import jax
import jax.numpy as jnp
import torch
from diffusers import AutoencoderKLCogVideoX
from jax.sharding import Mesh
from diffusers.models.autoencoders.vae import DecoderOutput, DiagonalGaussianDistribution
from diffusers.models.modeling_outputs import AutoencoderKLOutput

from . import convert, memory, patches, tiling, validation
from .frames import frame_batches
from .lowering import LoweredVAE, jax_weights
from .mesh import Placement, check_mesh
from .programs import Programs
from .sources import DeviceSource, HostSource, ShapeSource, is_abstract

logger = logging.getLogger(__name__)

_DTYPE_NAMES = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
}


def _as_dtype(dtype) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype.removeprefix("torch.")]
    raise TypeError(f"dtype must be a torch.dtype or one of {sorted(_DTYPE_NAMES)}, got {dtype!r}")


def _is_torchax(x) -> bool:
    return getattr(x, "_elem", None) is not None and isinstance(x._elem, jax.Array)


def _like(out: jax.Array, x: torch.Tensor) -> torch.Tensor:
    """out as a tensor like the caller's x: a torchax tensor on the device, or a torch tensor on x's device."""
    if _is_torchax(x):
        return x._env.j2t_iso(out.astype(convert.jax_dtype(x.dtype)))
    return convert.to_torch(out, device=x.device, dtype=x.dtype)


class TorchaxVAE:
    """diffusers' `AutoencoderKLCogVideoX` lowered to JAX through torchax; a drop-in for `pipe.vae`.

    The PyTorch module passed in is left untouched and keeps working: its weights
    are copied to the JAX device, and a private, storage-less copy of its module
    tree (with the patches in `torchax_vae.patches`) is what gets traced. Each
    encoder or decoder frame batch runs as jitted programs compiled once per
    input shape; the conv_cache stays on the device between frame batches.

    How a frame batch is split into programs (`program_split`): "batch", one
    program for the whole encoder or decoder; "layer", a chain of programs, one
    per resnet convolution (with the norm before it), sampler and top-level
    layer (`torchax_vae.staging`), which bounds what one program holds (a
    480x720 decoder batch: 7.7 GB of XLA temp memory instead of 48); "auto",
    the default: "layer" on a CPU device, where it is also faster, "batch" on
    accelerators and meshes.

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

    def __init__(
        self,
        vae: AutoencoderKLCogVideoX,
        *,
        dtype: torch.dtype | str | None = None,
        memory_budget: int | None = None,
        mesh: Mesh | None = None,
    ):
        if not isinstance(vae, AutoencoderKLCogVideoX):
            raise TypeError(f"vae must be a diffusers AutoencoderKLCogVideoX, got {type(vae).__name__}")
        if memory_budget is not None and (not isinstance(memory_budget, int) or memory_budget <= 0):
            raise ValueError(f"memory_budget must be a positive number of bytes, got {memory_budget!r}")
        self._dtype = _as_dtype(dtype) or vae.dtype
        self._device = vae.device
        self.config = vae.config
        self._placement = Placement(None if mesh is None else check_mesh(mesh))
        self._lowered = LoweredVAE(vae, mesh, self._placement.local_device().platform)
        self._weights = jax_weights(vae, convert.jax_dtype(self._dtype), self._placement.replicated)
        self._programs = Programs()
        self.memory_budget = memory_budget
        self.uniform_tiles = True
        self._auto_tiling_logged = False
        self.program_split = "auto"
        self._on_batch = None  # called after each frame batch program is run or (in precompile) compiled
        # diffusers' frame batching and tiling settings, as the wrapped instance has them.
        self.num_sample_frames_batch_size = vae.num_sample_frames_batch_size
        self.num_latent_frames_batch_size = vae.num_latent_frames_batch_size
        self.use_slicing = vae.use_slicing
        self.tiling_mode = "on" if vae.use_tiling else "auto"
        self.tile_sample_min_height = vae.tile_sample_min_height
        self.tile_sample_min_width = vae.tile_sample_min_width
        self.tile_latent_min_height = vae.tile_latent_min_height
        self.tile_latent_min_width = vae.tile_latent_min_width
        self.tile_overlap_factor_height = vae.tile_overlap_factor_height
        self.tile_overlap_factor_width = vae.tile_overlap_factor_width

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, subfolder: str | None = "vae", dtype=None, mesh: Mesh | None = None, **kwargs
    ) -> "TorchaxVAE":
        """Loads an AutoencoderKLCogVideoX through diffusers (a local directory works offline) and wraps it.

        Args:
            name_or_path (`str`): hub id or local directory, as for diffusers' `from_pretrained`.
            subfolder (`str`, *optional*, defaults to `"vae"`): the VAE's folder inside it.
            dtype (`torch.dtype`, *optional*): compute dtype; the checkpoint's by default.
            mesh (`jax.sharding.Mesh`, *optional*): as for the constructor.
            kwargs: passed to `AutoencoderKLCogVideoX.from_pretrained`.
        """
        vae = AutoencoderKLCogVideoX.from_pretrained(name_or_path, subfolder=subfolder, **kwargs)
        return cls(vae, dtype=dtype, mesh=mesh)

    # ----- what pipelines and users touch besides encode/decode -----

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def device(self) -> torch.device:
        """The torch device the wrapped model was on; results go to the caller's input device."""
        return self._device

    def to(self, *args, **kwargs) -> "TorchaxVAE":
        """Like `nn.Module.to`: a dtype recasts the JAX weights; a device is recorded, compute stays on JAX."""
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if device is not None:
            self._device = torch.device(device)
        if dtype is not None and dtype != self._dtype:
            target = convert.jax_dtype(dtype)
            self._weights = jax.tree.map(lambda w: w.astype(target), self._weights)
            self._dtype = dtype
        return self

    def eval(self) -> "TorchaxVAE":
        return self

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

    def disable_tiling(self) -> None:
        """Never tile (mode "off"), even where the untiled programs would not fit."""
        self.tiling_mode = "off"

    @property
    def tiling_mode(self) -> str:
        """"on", "off", or "auto" (tile an input larger than a tile only when it would not fit untiled)."""
        return self._tiling

    @tiling_mode.setter
    def tiling_mode(self, mode: str) -> None:
        if mode not in ("on", "off", "auto"):
            raise ValueError(f"tiling_mode must be 'on', 'off' or 'auto', got {mode!r}")
        self._tiling = mode

    @property
    def use_tiling(self) -> bool:
        """diffusers' flag: True when tiling is forced on."""
        return self._tiling == "on"

    @use_tiling.setter
    def use_tiling(self, value: bool) -> None:
        self._tiling = "on" if value else "off"

    @property
    def program_split(self) -> str:
        """"batch", "layer", or "auto" ("layer" on one CPU device, else "batch"): programs per frame batch."""
        return self._split

    @program_split.setter
    def program_split(self, split: str) -> None:
        if split not in ("batch", "layer", "auto"):
            raise ValueError(f"program_split must be 'batch', 'layer' or 'auto', got {split!r}")
        self._split = split

    @property
    def _layered(self) -> bool:
        if self._split == "auto":  # a mesh of CPU devices is for testing sharding: keep its programs whole
            return self._placement.local_device().platform == "cpu" and self._placement.mesh is None
        return self._split == "layer"

    def enable_slicing(self) -> None:
        """Encode and decode one batch element at a time."""
        self.use_slicing = True

    def disable_slicing(self) -> None:
        self.use_slicing = False

    def compile_stats(self) -> list[dict]:
        """One dict per compiled program: name, input_shapes, lower/compile seconds, devices, flops, temp_bytes."""
        return self._programs.stats()

    # ----- encode / decode -----

    def encode(self, x: torch.Tensor, return_dict: bool = True):
        """Encodes videos [B, C, F, H, W] into a `DiagonalGaussianDistribution`, as diffusers does."""
        validation.check_video(x, name="encode input", channels=self.config.in_channels, role="encoder")
        h = _like(self._per_sample(self._encode, self._source(x)), x)
        posterior = DiagonalGaussianDistribution(h)
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, F, H, W] into videos, as diffusers does."""
        validation.check_video(z, name="decode input", channels=self.config.latent_channels, role="decoder")
        sample = _like(self._per_sample(self._decode, self._source(z)), z)
        return DecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' `AutoencoderKLCogVideoX.forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def precompile(self, kind: str, shape) -> list[dict]:
        """Compiles, without running anything, every program `encode` or `decode` needs for an input of `shape`.

        Follows the current tiling and slicing settings. Returns those programs'
        `compile_stats()` entries; later calls with that shape compile nothing.

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
        """
        if kind not in ("encode", "decode"):
            raise ValueError(f"kind must be 'encode' or 'decode', got {kind!r}")
        role = "encoder" if kind == "encode" else "decoder"
        channels = self.config.in_channels if kind == "encode" else self.config.latent_channels
        shape = validation.check_shape(shape, name=f"{kind} shape", channels=channels, role=role)
        source = ShapeSource(shape, convert.jax_dtype(self._dtype), self._placement)
        with self._programs.recording() as used:
            self._per_sample(self._encode if kind == "encode" else self._decode, source)
        return [dataclasses.asdict(stats) for stats in used]

    def _source(self, x: torch.Tensor):
        dtype = convert.jax_dtype(self._dtype)
        if _is_torchax(x):
            return DeviceSource(x._elem, dtype, self._placement)
        return HostSource(x, dtype, self._placement)

    def _per_sample(self, fn, source):
        """Runs `fn` on the whole batch, or per batch element when slicing; a JAX array (or its shape)."""
        pieces = source.split() if self.use_slicing and source.shape[0] > 1 else [source]
        outputs = [fn(piece) for piece in pieces]
        if len(outputs) == 1:
            return outputs[0]
        return _apply(_join, outputs, axis=0)

    def _encode(self, source) -> jax.Array:
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("encoder", self._lowered.encode_step, source, self.num_sample_frames_batch_size, sample_tile, latent_tile)

    def _decode(self, source) -> jax.Array:
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("decoder", self._lowered.decode_step, source, self.num_latent_frames_batch_size, latent_tile, sample_tile)

    def _run(self, name, step, source, batch_size, in_tile, out_tile) -> jax.Array:
        """Frame-batched `step` over the source, tiled when tiling is on (or needed) and the input exceeds in_tile."""
        height, width = source.shape[3:]
        if (height > in_tile[0] or width > in_tile[1]) and self._should_tile(name, step, source, batch_size, in_tile):
            overlap = (self.tile_overlap_factor_height, self.tile_overlap_factor_width)
            lay = tiling.layout(*in_tile, *out_tile, *overlap)
            return self._tiled(name, step, source, batch_size, lay)
        return _apply(_join, self._frames(name, step, source, batch_size), axis=2)

    def _frames(self, name, step, source, batch_size, block=None, valid=None) -> list:
        """`step` over diffusers' frame batches, carrying conv_cache on the device; the batch outputs.

        block: (row, col, height, width) of a tile to cut from each frame batch
        (default: the whole frame). valid: that tile's (height, width) inside the
        video when the block is a zero-padded full-size tile (patches/tile_mask.py).
        """
        conv_cache = None
        outputs = []
        extra = ()
        if valid is not None:
            name = f"{name}/tile"
            extra = (source.indices(valid),)
        for start, end in frame_batches(source.shape[2], batch_size):
            if block is None:
                chunk = source.take((start, end))
            else:
                chunk = source.take((start, end), (block[0], block[2]), (block[1], block[3]))
            if self._layered:
                out, conv_cache = self._staged_batch(name, chunk, conv_cache, extra)
            else:
                program = name if conv_cache is None else f"{name}+conv_cache"
                out, conv_cache = self._programs.run(program, step, self._weights, chunk, conv_cache, *extra)
            outputs.append(out)
            if self._on_batch is not None:  # progress reporting (torchax_vae.commands)
                self._on_batch()
        return outputs

    def _staged_batch(self, name, chunk, conv_cache, extra):
        """One frame batch as one program per stage (torchax_vae/staging.py); conv_cache is a list per stage."""
        role = name.partition("/")[0]
        step = self._lowered.encode_stage if role == "encoder" else self._lowered.decode_stage
        stages = self._lowered.stages[role]
        caches = conv_cache or [None] * len(stages)
        given = handed = None  # the previous top-level stage's output; the previous sub-stage's
        new_caches = []
        for stage, cache in zip(stages, caches):
            program = f"{name}/{stage.name}" + ("" if conv_cache is None else "+conv_cache")
            weights = self._lowered.stage_weights(role, stage, self._weights)
            out, cache = self._programs.run(program, functools.partial(step, stage), weights, chunk, cache, (given, handed), *extra)
            new_caches.append(cache)
            given, handed = (out, None) if stage.last_sub else (given, out)
        return given, new_caches

    def _tiled(self, name, step, source, batch_size, lay: tiling.TileLayout) -> jax.Array:
        """diffusers' tiled_encode/tiled_decode, then the tiles blended on the device.

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
            batches = self._frames(name, step, source, batch_size, (tile.row, tile.col, *size), valid)
            out_size = batches[0].shape[3:]
            # the output diffusers' tile would have had
            crop = tuple(patches.tile_mask.extent_at(v, n, o) for v, n, o in zip(tile.valid, size, out_size))
            return batches, crop

        results = [[run(tile) for tile in row] for row in grid]
        outputs = [[batches for batches, _ in row] for row in results]
        crops = tuple(tuple(crop for _, crop in row) for row in results)
        return _apply(tiling.assemble, outputs, lay=lay, crops=crops)

    def _should_tile(self, name, step, source, batch_size, in_tile) -> bool:
        """Forced on or off by enable_tiling/disable_tiling; in "auto", tiles if the untiled program would not fit."""
        if self._tiling != "auto":
            return self._tiling == "on"
        first = frame_batches(source.shape[2], batch_size)[0]
        block = ShapeSource(source.shape, convert.jax_dtype(self._dtype), self._placement).take(first)
        if self._layered:
            with self._programs.recording() as used:
                _, caches = self._staged_batch(name, block, None, ())
            # the largest program with its inputs (the hand-over from the one before), and the new
            # conv_cache of every layer, which stays live from its program to the next frame batch
            carried = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(caches))
            need = max(stats.temp_bytes + stats.output_bytes + stats.argument_bytes for stats in used) + carried
        else:
            stats = self._programs.compile(name, step, self._weights, block, None)
            need = stats.temp_bytes + stats.output_bytes
        budget = self.memory_budget
        if budget is None:
            budget = memory.free_bytes(self._placement.local_device())
        if budget is None or need <= budget:
            return False
        if not self._auto_tiling_logged:
            logger.warning(
                "TorchaxVAE: the untiled %s needs %.3g GB for input %s, more than the %.3g GB available; "
                "tiling it in %dx%d tiles. enable_tiling()/disable_tiling() force the choice.",
                name, need / 1e9, source.shape, budget / 1e9, *in_tile,
            )
            self._auto_tiling_logged = True
        return True


def _join(arrays, *, axis):
    return jnp.concatenate(arrays, axis=axis)


def _apply(fn, *args, **static):
    """fn(*args, **static) on arrays, or its output's shape when args are jax.ShapeDtypeStruct."""
    if is_abstract(args):
        return jax.eval_shape(functools.partial(fn, **static), *args)
    return fn(*args, **static)

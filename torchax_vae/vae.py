"""TorchaxVAE: diffusers' AutoencoderKLCogVideoX, run on JAX through torchax, with its interface."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch
from diffusers import AutoencoderKLCogVideoX
from diffusers.models.autoencoders.vae import DecoderOutput, DiagonalGaussianDistribution
from diffusers.models.modeling_outputs import AutoencoderKLOutput

from . import convert, tiling, validation
from .frames import frame_batches
from .lowering import LoweredVAE, jax_weights
from .programs import Programs

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


@functools.partial(jax.jit, static_argnames="size")
def _take_frames(data, start, *, size):
    return jax.lax.dynamic_slice_in_dim(data, start, size, axis=2)


def _is_torchax(x) -> bool:
    return getattr(x, "_elem", None) is not None and isinstance(x._elem, jax.Array)


class TorchaxVAE:
    """diffusers' `AutoencoderKLCogVideoX` lowered to JAX through torchax; a drop-in for `pipe.vae`.

    The PyTorch module passed in is left untouched and keeps working: its weights
    are copied to the JAX device, and a private, storage-less copy of its module
    tree (with the patches in `torchax_vae.patches`) is what gets traced. Each
    encoder or decoder frame batch is one jitted program, compiled once per
    input shape; the conv_cache stays on the device between frame batches.

    Args:
        vae (`AutoencoderKLCogVideoX`): the model to run.
        dtype (`torch.dtype`, *optional*): compute dtype; defaults to the model's.
    """

    def __init__(self, vae: AutoencoderKLCogVideoX, *, dtype: torch.dtype | str | None = None):
        if not isinstance(vae, AutoencoderKLCogVideoX):
            raise TypeError(f"vae must be a diffusers AutoencoderKLCogVideoX, got {type(vae).__name__}")
        self._dtype = _as_dtype(dtype) or vae.dtype
        self._device = vae.device
        self.config = vae.config
        self._lowered = LoweredVAE(vae)
        self._weights = jax_weights(vae, convert.jax_dtype(self._dtype))
        self._programs = Programs()
        # diffusers' frame batching and tiling settings, as the wrapped instance has them.
        self.num_sample_frames_batch_size = vae.num_sample_frames_batch_size
        self.num_latent_frames_batch_size = vae.num_latent_frames_batch_size
        self.use_slicing = vae.use_slicing
        self.use_tiling = vae.use_tiling
        self.tile_sample_min_height = vae.tile_sample_min_height
        self.tile_sample_min_width = vae.tile_sample_min_width
        self.tile_latent_min_height = vae.tile_latent_min_height
        self.tile_latent_min_width = vae.tile_latent_min_width
        self.tile_overlap_factor_height = vae.tile_overlap_factor_height
        self.tile_overlap_factor_width = vae.tile_overlap_factor_width

    @classmethod
    def from_pretrained(cls, name_or_path: str, subfolder: str | None = "vae", dtype=None, **kwargs) -> "TorchaxVAE":
        """Loads an AutoencoderKLCogVideoX through diffusers (a local directory works offline) and wraps it.

        Args:
            name_or_path (`str`): hub id or local directory, as for diffusers' `from_pretrained`.
            subfolder (`str`, *optional*, defaults to `"vae"`): the VAE's folder inside it.
            dtype (`torch.dtype`, *optional*): compute dtype; the checkpoint's by default.
            kwargs: passed to `AutoencoderKLCogVideoX.from_pretrained`.
        """
        vae = AutoencoderKLCogVideoX.from_pretrained(name_or_path, subfolder=subfolder, **kwargs)
        return cls(vae, dtype=dtype)

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
        """Tiled encode and decode, with the same arguments and meaning as diffusers'."""
        self.use_tiling = True
        self.tile_sample_min_height = tile_sample_min_height or self.tile_sample_min_height
        self.tile_sample_min_width = tile_sample_min_width or self.tile_sample_min_width
        factor = 2 ** (len(self.config.block_out_channels) - 1)
        self.tile_latent_min_height = int(self.tile_sample_min_height / factor)
        self.tile_latent_min_width = int(self.tile_sample_min_width / factor)
        self.tile_overlap_factor_height = tile_overlap_factor_height or self.tile_overlap_factor_height
        self.tile_overlap_factor_width = tile_overlap_factor_width or self.tile_overlap_factor_width

    def disable_tiling(self) -> None:
        self.use_tiling = False

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
        h = self._per_sample(self._encode, x)
        posterior = DiagonalGaussianDistribution(h)
        return AutoencoderKLOutput(latent_dist=posterior) if return_dict else (posterior,)

    def decode(self, z: torch.Tensor, return_dict: bool = True):
        """Decodes latents [B, C, F, H, W] into videos, as diffusers does."""
        validation.check_video(z, name="decode input", channels=self.config.latent_channels, role="decoder")
        sample = self._per_sample(self._decode, z)
        return DecoderOutput(sample=sample) if return_dict else (sample,)

    def forward(self, sample: torch.Tensor, sample_posterior: bool = False, return_dict: bool = True, generator=None):
        """Encode then decode, as diffusers' `AutoencoderKLCogVideoX.forward`."""
        posterior = self.encode(sample).latent_dist
        z = posterior.sample(generator=generator) if sample_posterior else posterior.mode()
        dec = self.decode(z).sample
        return DecoderOutput(sample=dec) if return_dict else (dec,)

    __call__ = forward

    def _per_sample(self, fn, x: torch.Tensor) -> torch.Tensor:
        """Runs `fn` on the JAX copy of x (whole, or per batch element when slicing); result like x."""
        on_device = _is_torchax(x)
        data = x._elem if on_device else x
        if self.use_slicing and x.shape[0] > 1:
            # One split op on the device (indexing with Python ints would move each index there).
            pieces = data.split(1) if isinstance(data, torch.Tensor) else jnp.split(data, x.shape[0])
        else:
            pieces = [data]
        outputs = [fn(piece) for piece in pieces]
        out = jnp.concatenate(outputs, axis=0) if len(outputs) > 1 else outputs[0]
        if on_device:
            return x._env.j2t_iso(out.astype(convert.jax_dtype(x.dtype)))
        return convert.to_torch(out, device=x.device, dtype=x.dtype)

    def _frames(self, name, step, data, batch_size) -> jax.Array:
        """Runs `step` over diffusers' frame batches of data (torch or JAX), carrying conv_cache on the device."""
        dtype = convert.jax_dtype(self._dtype)
        conv_cache = None
        outputs = []
        for start, end in frame_batches(data.shape[2], batch_size):
            if isinstance(data, torch.Tensor):  # on the host: copy just this batch in
                chunk = convert.to_jax(data[:, :, start:end], dtype)
            else:  # on the device: a traced start index keeps one slice program per batch size
                start_index = jax.device_put(np.int32(start))
                chunk = _take_frames(data, start_index, size=end - start).astype(dtype)
            program = name if conv_cache is None else f"{name}+conv_cache"
            out, conv_cache = self._programs.run(program, step, self._weights, chunk, conv_cache)
            outputs.append(out)
        return jnp.concatenate(outputs, axis=2) if len(outputs) > 1 else outputs[0]

    def _encode(self, x) -> jax.Array:
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("encoder", self._lowered.encode_step, x, self.num_sample_frames_batch_size, sample_tile, latent_tile)

    def _decode(self, z) -> jax.Array:
        sample_tile = (self.tile_sample_min_height, self.tile_sample_min_width)
        latent_tile = (self.tile_latent_min_height, self.tile_latent_min_width)
        return self._run("decoder", self._lowered.decode_step, z, self.num_latent_frames_batch_size, latent_tile, sample_tile)

    def _run(self, name, step, data, batch_size, in_tile, out_tile) -> jax.Array:
        """Frame-batched `step` over data, tiled as diffusers tiles when tiling is on and data exceeds in_tile."""

        def run(part):
            return self._frames(name, step, part, batch_size)

        height, width = data.shape[3], data.shape[4]
        if self.use_tiling and (width > in_tile[1] or height > in_tile[0]):
            overlap = (self.tile_overlap_factor_height, self.tile_overlap_factor_width)
            return self._tiled(data, run, tiling.layout(*in_tile, *out_tile, *overlap))
        return run(data)

    def _tiled(self, data, run_tile, lay: tiling.TileLayout) -> jax.Array:
        grid = lay.starts(data.shape[3], data.shape[4])
        tiles = [[run_tile(data[:, :, :, i : i + lay.tile_height, j : j + lay.tile_width]) for i, j in row] for row in grid]
        return tiling.assemble(tiles, lay)

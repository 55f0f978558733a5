"""Where each program's input block (frames x tile) comes from: the host, the device, or shapes only.

A program's input is a block of the input: of a video [B, C, F, H, W] a frame
batch, of images [B, C, H, W] the whole of them (no frame axis: `frames` is
None), and when tiling, one tile of it at the full tile size (zero-padded past the video's edge,
torchax_vae/patches/tile_mask.py). `HostSource` copies just that block from a CPU torch
tensor; `DeviceSource` cuts it on the device with one compiled slice per block
shape (start indices are data, so positions do not recompile); `ShapeSource`
gives only its shape, so every program a call needs can be compiled without
running anything (`TorchaxVAE.precompile`). Blocks are placed as the
`Placement` says (on a mesh: split like the activations they feed).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch

from torchax_vae.engine import convert
from torchax_vae.placement.mesh import Placement


@functools.partial(jax.jit, static_argnames=("size", "dtype", "sharding"))
def _take(data, starts, *, size, dtype, sharding):
    zero = jnp.zeros((), jnp.int32)
    block = jax.lax.dynamic_slice(data, (zero, zero, *(starts[i] for i in range(len(size)))), data.shape[:2] + size)
    block = block.astype(dtype)
    return block if sharding is None else jax.lax.with_sharding_constraint(block, sharding)


@functools.partial(jax.jit, static_argnames=("height", "width"))
def _pad_to(data, *, height, width):
    return jnp.pad(data, ((0, 0),) * (data.ndim - 2) + ((0, height - data.shape[-2]), (0, width - data.shape[-1])))


def block(shape, frames=None, rows=None, cols=None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(starts, sizes) of a block on the axes after the channels of an input of `shape`: frames [start, end)
    (5-D inputs only; None: all), rows and cols (start, size) (None: all)."""
    if len(shape) == 3:  # audio [B, C, T]: a time range only
        if rows is not None or cols is not None:
            raise ValueError(f"a 3-D input [B, C, T] has no rows or columns to take; got {rows}, {cols}")
        frames = frames or (0, shape[2])
        return (frames[0],), (frames[1] - frames[0],)
    rows = rows or (0, shape[-2])
    cols = cols or (0, shape[-1])
    if len(shape) == 4:
        if frames is not None:
            raise ValueError(f"a 4-D input [B, C, H, W] has no frames to take; got frames {frames}")
        return (rows[0], cols[0]), (rows[1], cols[1])
    frames = frames or (0, shape[2])
    return (frames[0], rows[0], cols[0]), (frames[1] - frames[0], rows[1], cols[1])


class HostSource:
    """Blocks copied from a torch tensor (any torch device) to the JAX device, one at a time."""

    def __init__(self, data: torch.Tensor, dtype, placement: Placement):
        self.shape, self._data, self._dtype, self._placement = tuple(data.shape), data, dtype, placement

    def split(self) -> list["HostSource"]:
        return [HostSource(piece, self._dtype, self._placement) for piece in self._data.split(1)]

    def pad_to(self, height: int, width: int) -> None:
        """Nothing to do: `take` pads each block as it cuts it."""

    def take(self, frames: tuple[int, int] | None = None, rows=None, cols=None) -> jax.Array:
        """Frames [start, end) (5-D) and, if given, rows/cols (start, size), zero-padded to size (`block`)."""
        starts, sizes = block(self.shape, frames, rows, cols)
        piece = self._data[(slice(None), slice(None), *(slice(s, s + n) for s, n in zip(starts, sizes)))]
        missing_h, missing_w = (sizes[-2] - piece.shape[-2], sizes[-1] - piece.shape[-1]) if len(sizes) > 1 else (0, 0)
        if missing_h or missing_w:
            piece = torch.nn.functional.pad(piece, (0, missing_w, 0, missing_h))
        return convert.to_jax(piece, self._dtype, self._placement.activation(piece.shape), alias=True)

    def indices(self, values) -> jax.Array:
        return convert.put(np.asarray(values, np.int32), self._placement.replicated)


class DeviceSource(HostSource):
    """Blocks cut from a JAX array already on the device; nothing crosses to or from the host."""

    def __init__(self, data: jax.Array, dtype, placement: Placement):
        traced = isinstance(data, jax.core.Tracer)  # under jax.vjp (gradients): placed by the caller
        if not traced and data.sharding.device_set != placement.replicated.device_set:  # e.g. on one device of the mesh
            data = jax.device_put(data, placement.activation(data.shape))
        super().__init__(data, dtype, placement)

    def split(self) -> list["DeviceSource"]:
        # One split op on the device (indexing with Python ints would move each index there).
        return [DeviceSource(piece, self._dtype, self._placement) for piece in jnp.split(self._data, self.shape[0])]

    def pad_to(self, height: int, width: int) -> None:
        """Zero-pads the video once so that every tile block lies inside it."""
        if (height, width) != tuple(self._data.shape[-2:]):
            self._data = _pad_to(self._data, height=height, width=width)

    def take(self, frames=None, rows=None, cols=None) -> jax.Array:
        starts, size = block(self.shape, frames, rows, cols)
        sharding = None if self._placement.mesh is None else self._placement.activation(self.shape[:2] + size)
        return _take(self._data, self.indices(list(starts)), size=size, dtype=self._dtype, sharding=sharding)


class ShapeSource(HostSource):
    """Block shapes only: what `take` would give, as jax.ShapeDtypeStruct."""

    def __init__(self, shape, dtype, placement: Placement):
        self.shape, self._dtype, self._placement = tuple(shape), dtype, placement

    def split(self) -> list["ShapeSource"]:
        return [ShapeSource((1,) + self.shape[1:], self._dtype, self._placement)] * self.shape[0]

    def take(self, frames=None, rows=None, cols=None) -> jax.ShapeDtypeStruct:
        shape = self.shape[:2] + block(self.shape, frames, rows, cols)[1]
        return jax.ShapeDtypeStruct(shape, self._dtype, sharding=self._placement.activation(shape))

    def indices(self, values) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((len(values),), jnp.int32, sharding=self._placement.replicated)



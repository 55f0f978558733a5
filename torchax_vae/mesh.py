"""Where arrays live: one device, or a ('dp', 'tp') mesh with width-sharded activations.

`make_mesh` builds the mesh from `jax.devices()` (all processes' devices after
`jax.distributed.initialize`). `width_spec` is the sharding policy: how an
NCTHW activation is split over the mesh (patches/sharding_marks.py puts it on
the model's activations while a program is traced). `Placement` answers, for
TorchaxVAE, where the weights go (replicated), where an input block goes
(split like the activations it feeds) and where small index vectors go.

A width the mesh axes do not divide gets the largest split that does
(('dp', 'tp'), then the larger of 'tp' and 'dp', then the other, then none),
logged once per width and mesh: e.g. the 90-wide latent level of a 720-wide
video runs replicated on a (1, 8) mesh and 2-way split on a (2, 4) one.
"""

import logging

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from . import gpu_memory

__all__ = ["make_mesh"]

logger = logging.getLogger(__name__)

AXES = ("dp", "tp")
_LOGGED: set = set()


def make_mesh(devices=None, *, dp: int = 1) -> Mesh:
    """A ('dp', 'tp') mesh over `devices` (default: `jax.devices()`, every process's), `dp` rows of tp devices.

    Activations split their width over both axes, or, when the batch divides by
    dp > 1, their batch over 'dp' and their width over 'tp'.
    """
    if devices is None:
        gpu_memory.share_gpu_with_torch()  # before jax.devices() starts JAX's backends
    devices = list(jax.devices() if devices is None else devices)
    if not isinstance(dp, int) or dp < 1 or len(devices) % dp:
        raise ValueError(f"dp must be a positive divisor of the device count {len(devices)}, got {dp!r}")
    grid = np.array(devices, dtype=object).reshape(dp, len(devices) // dp)
    # Auto axes: XLA propagates shardings between our marks (Explicit ones would demand a spec everywhere).
    return Mesh(grid, AXES, axis_types=(AxisType.Auto,) * 2)


def check_mesh(mesh) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (see torchax_vae.make_mesh), got {type(mesh).__name__}")
    if tuple(mesh.axis_names) != AXES:
        raise ValueError(f"mesh axes must be {AXES}, got {tuple(mesh.axis_names)}")
    if any(t != AxisType.Auto for t in mesh.axis_types):
        raise ValueError(
            f"mesh axes must be AxisType.Auto (jax.make_mesh makes Explicit ones by default), got {mesh.axis_types}"
        )
    return mesh


def _size(mesh: Mesh, axes) -> int:
    if axes is None:
        return 1
    names = axes if isinstance(axes, tuple) else (axes,)
    size = 1
    for name in names:
        size *= mesh.shape[name]
    return size


def width_spec(mesh: Mesh, shape) -> PartitionSpec:
    """The PartitionSpec for an NCTHW array of `shape`: batch over 'dp' if it divides, width over the rest.

    Only splits whose device count divides the axis length are used, largest first.
    """
    batch, width = shape[0], shape[-1]
    dp = mesh.shape["dp"]
    batch_axis = "dp" if dp > 1 and batch % dp == 0 else None
    # Largest split first (sorted() is stable: ties keep this order).
    candidates = ["tp"] if batch_axis else sorted([AXES, "tp", "dp"], key=lambda c: -_size(mesh, c))
    wanted = _size(mesh, candidates[0])
    width_axis = next((c for c in candidates if _size(mesh, c) > 1 and width % _size(mesh, c) == 0), None)
    if _size(mesh, width_axis) < wanted:
        key = (width, batch_axis, tuple(mesh.shape.items()))
        if key not in _LOGGED:
            _LOGGED.add(key)
            logger.warning(
                "TorchaxVAE: width %d does not divide into %d shards on mesh %s; splitting it %d-way (axes %s) there.",
                width, wanted, dict(mesh.shape), _size(mesh, width_axis), width_axis,
            )
    return PartitionSpec(batch_axis, *([None] * (len(shape) - 2)), width_axis)


def sharding_for(mesh: Mesh, shape) -> NamedSharding:
    return NamedSharding(mesh, width_spec(mesh, shape))


class Placement:
    """Shardings for TorchaxVAE's arrays on one device (mesh None) or on a mesh."""

    def __init__(self, mesh: Mesh | None, device=None):
        self.mesh = mesh
        if mesh is None:
            self.replicated = SingleDeviceSharding(device or jax.devices()[0])
        else:
            self.replicated = NamedSharding(mesh, PartitionSpec())

    def activation(self, shape):
        """Where an NCTHW block of `shape` goes: split like the marked activations inside the programs."""
        if self.mesh is None:
            return self.replicated
        return sharding_for(self.mesh, shape)

    def local_device(self):
        """A device of this process (for memory queries)."""
        return next(iter(self.replicated.addressable_devices))

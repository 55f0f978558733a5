"""Where arrays live: one device, or a ('dp', 'tp') mesh with width-sharded activations.

`make_mesh` builds the mesh from `jax.devices()` (all processes' devices after
`jax.distributed.initialize`). `Placement` answers, for TorchaxVAE, where the
weights go (replicated), where an input block goes (sharded like the
activations, patches/sharding_marks.py) and where small index vectors go.
"""

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

from .patches import sharding_marks

__all__ = ["make_mesh"]


def make_mesh(devices=None, *, dp: int = 1) -> Mesh:
    """A ('dp', 'tp') mesh over `devices` (default: `jax.devices()`, every process's), `dp` rows of tp devices.

    Activations split their width over both axes, or, when the batch divides by
    dp > 1, their batch over 'dp' and their width over 'tp'.
    """
    devices = list(jax.devices() if devices is None else devices)
    if not isinstance(dp, int) or dp < 1 or len(devices) % dp:
        raise ValueError(f"dp must be a positive divisor of the device count {len(devices)}, got {dp!r}")
    grid = np.array(devices, dtype=object).reshape(dp, len(devices) // dp)
    # Auto axes: XLA propagates shardings between our marks (Explicit ones would demand a spec everywhere).
    return Mesh(grid, sharding_marks.AXES, axis_types=(AxisType.Auto,) * 2)


def check_mesh(mesh) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (see torchax_vae.make_mesh), got {type(mesh).__name__}")
    if tuple(mesh.axis_names) != sharding_marks.AXES:
        raise ValueError(f"mesh axes must be {sharding_marks.AXES}, got {tuple(mesh.axis_names)}")
    if any(t != AxisType.Auto for t in mesh.axis_types):
        raise ValueError(
            f"mesh axes must be AxisType.Auto (jax.make_mesh makes Explicit ones by default), got {mesh.axis_types}"
        )
    return mesh


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
        return sharding_marks.sharding_for(self.mesh, shape)

    def local_device(self):
        """A device of this process (for memory queries)."""
        return next(iter(self.replicated.addressable_devices))

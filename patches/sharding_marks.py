"""Sharding marks: NCTHW activations split on their width axis over a ('dp', 'tp') mesh.

Upstream: nothing. diffusers' model has no notion of devices, and without marks
XLA's sharding propagation starts from the (replicated) weights and keeps
every activation whole on every device.

Here: forward hooks on the layers that make or consume the large activations
(every convolution inside a CogVideoXCausalConv3d, every GroupNorm, every
CogVideoXUpsample3D/Downsample3D) put `jax.lax.with_sharding_constraint` on
their 5-D inputs and outputs while a trace runs inside `activations_on(mesh)`.
The width axis is split over ('dp', 'tp'); when the batch divides by 'dp' (and
'dp' > 1) the batch goes over 'dp' and the width over 'tp'. XLA inserts the
halo exchanges the 3x3 convolutions need and the cross-device sums of the
GroupNorm statistics. The conv_cache, a slice of the conv inputs, inherits
the marks. Outside `activations_on` the hooks do nothing, so single-device
programs are unchanged.

A width the mesh axes do not divide gets the largest split that does
(('dp', 'tp'), then the larger of 'tp' and 'dp', then the other, then none),
logged once per width and mesh: e.g. the 90-wide latent level of a 720-wide
video runs replicated on a (1, 8) mesh and 2-way split on a (2, 4) one.
"""

import contextlib
import contextvars
import functools
import logging

import jax
from diffusers.models.downsampling import CogVideoXDownsample3D
from diffusers.models.upsampling import CogVideoXUpsample3D
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from torch import nn

from .group_norm import TorchaxGroupNorm
from .safe_conv3d import PlainConv3d
from .torchax_torch213 import import_torchax

logger = logging.getLogger(__name__)

AXES = ("dp", "tp")
_MESH = contextvars.ContextVar("sharding_mesh", default=None)
_LOGGED: set = set()


@contextlib.contextmanager
def activations_on(mesh: Mesh | None):
    """Inside (while tracing): marked layers constrain their activations to `mesh` (None: no marks)."""
    token = _MESH.set(mesh)
    try:
        yield
    finally:
        _MESH.reset(token)


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


def constrain(x):
    """x with its sharding fixed to `width_spec` (5-D arrays inside `activations_on`), else x."""
    mesh = _MESH.get()
    if mesh is None or x.ndim != 5:
        return x
    return jax.lax.with_sharding_constraint(x, sharding_for(mesh, x.shape))


@functools.cache
def _torch_constrain():
    return import_torchax().interop.torch_view(constrain)


def _mark_inputs(module, args):
    if _MESH.get() is None:
        return None
    return (_torch_constrain()(args[0]), *args[1:])


def _mark_output(module, args, output):
    if _MESH.get() is None:
        return None
    return _torch_constrain()(output)


MARKED = (PlainConv3d, TorchaxGroupNorm, CogVideoXUpsample3D, CogVideoXDownsample3D)


def patch(model: nn.Module) -> int:
    """Registers the marking hooks on every layer of a MARKED type (after the other patches); returns how many."""
    count = 0
    for module in model.modules():
        if isinstance(module, MARKED):
            module.register_forward_pre_hook(_mark_inputs)
            module.register_forward_hook(_mark_output)
            count += 1
    return count

"""Sharding marks: NCTHW activations split on their width axis over a ('dp', 'tp') mesh.

Upstream: nothing. diffusers' model has no notion of devices, and without marks
XLA's sharding propagation starts from the (replicated) weights and keeps
every activation whole on every device.

Here: forward hooks on the layers that make or consume the large activations
(each family's adapter names them, `marked`: e.g. CogVideoX every convolution
inside a CogVideoXCausalConv3d, every GroupNorm, every
CogVideoXUpsample3D/Downsample3D; Wan every WanCausalConv3d, WanResample,
AvgDown3D/DupUp3D and WanAttentionBlock) put `jax.lax.with_sharding_constraint` on
their 5-D inputs and outputs while a trace runs for a mesh (`TraceOptions.mesh`).
The width axis is split over ('dp', 'tp'); when the batch divides by 'dp' (and
'dp' > 1) the batch goes over 'dp' and the width over 'tp'. XLA inserts the
halo exchanges the 3x3 convolutions need and the cross-device sums of the
GroupNorm statistics (and the all-gathers of Wan's spatial attention). The
conv_cache / feat_cache, slices of the conv inputs, inherit the marks. Without a mesh the hooks do nothing, so single-device
programs are unchanged.

The policy (which axes, which split of height and width) is `torchax_vae.placement.mesh.sharding_for`;
this patch only places the marks.
"""

import functools

import jax
from torch import nn

from torchax_vae.placement.mesh import sharding_for
from torchax_vae.patches.options import current
from torchax_vae.patches.torchax_torch213 import import_torchax

def constrain(x, uneven: bool = True):
    """x with its sharding fixed to `torchax_vae.placement.mesh.sharding_for` (arrays of the trace's rank, 5-D video or 4-D
    images, while tracing for a mesh), else x.

    uneven: a layer's activation may split into blocks of unequal size (XLA pads the last); a program's carried
    arrays (`mark`) split evenly, so that they leave the program split.
    """
    options = current()
    if options.mesh is None or x.ndim != options.rank:  # the family's activations, not a layer's inner reshapes
        return x
    return jax.lax.with_sharding_constraint(x, sharding_for(options.mesh, x.shape, options.grid, uneven=uneven))


@functools.cache
def _torch_constrain(uneven: bool = True):
    return import_torchax().interop.torch_view(functools.partial(constrain, uneven=uneven))


def mark(tensor):
    """A torch (torchax) tensor with its sharding fixed as an activation's, while tracing for a mesh; else itself.

    For what a program hands on besides its layers' activations (a carried cache): marked, its sharding is the
    same whichever program made it, so the program it feeds compiles once.
    """
    if current().mesh is None:
        return tensor
    return _torch_constrain(False)(tensor)


def _mark_inputs(module, args):
    if current().mesh is None:
        return None
    return (_torch_constrain()(args[0]), *args[1:])


def _mark_output(module, args, output):
    """The layer's output marked; of a layer returning (activation, cache) (diffusers' causal convolutions with
    a conv_cache), the activation."""
    if current().mesh is None:
        return None
    if isinstance(output, tuple):
        return (_torch_constrain()(output[0]), *output[1:])
    return _torch_constrain()(output)


def patch(model: nn.Module, marked: tuple) -> int:
    """Registers the marking hooks on every layer of a `marked` class (after the other patches); returns how many."""
    count = 0
    for module in model.modules():
        if marked and isinstance(module, marked):
            module.register_forward_pre_hook(_mark_inputs)
            module.register_forward_hook(_mark_output)
            count += 1
    return count

"""Nearest-neighbour upsampling by whole factors as a repeat (broadcast + reshape), not a gather.

Upstream: torchax decomposes `aten.upsample_nearest{1,2,3}d` and
`aten._upsample_nearest_exact{1,2,3}d` (diffusers' `F.interpolate(...,
scale_factor=2)` in CogVideoX's and HunyuanVideo's upsamplers,
`nn.Upsample(mode="nearest-exact")` in Wan's) into `aten._unsafe_index`, a
gather with computed indices. XLA's SPMD partitioner cannot split such a gather
along a sharded axis, so on a mesh it all-gathers the whole activation on
every device before each upsampler: the optimized HLO for two H100s showed an
`all-gather` of the full-width input of every upsampler, and per-GPU temp
memory above one GPU's (issue 27).

Here: where every output extent is a whole multiple of the input's (what
every upsampler of these VAEs does), each spatial axis is repeated with a
broadcast and a reshape, which XLA partitions along the sharded axis with no
communication. Output index i reads input floor(i / s) for a factor s, which
is both modes' rule at whole factors (nearest-exact's floor((i + 0.5) / s)
equals it), so the result is the same copy of values. Other sizes keep
torchax's decomposition (`stock`). Applies to every trace: one device gets
the same values without the index arithmetic.
Still needed while torchax decomposes these ops to a gather
(tests/test_patches.py::test_nearest_upsample_*).
"""

import dataclasses
import math

import torch

from torchax_vae.patches.torchax_torch213 import import_torchax

OPS = ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
       "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d")


def output_size(shape, output_size=None, scales=None) -> tuple[int, ...]:
    """The spatial output extents aten computes from an explicit size or scale factors."""
    spatial = tuple(shape[2:])
    if output_size is not None:
        return tuple(int(n) for n in output_size)
    return tuple(int(math.floor(n * float(s))) for n, s in zip(spatial, scales))


def factors(shape, size) -> tuple[int, ...] | None:
    """The whole repeat factor per spatial axis, or None where some output extent is not a multiple of the input's."""
    spatial = tuple(shape[2:])
    if len(size) != len(spatial) or any(n <= 0 or o % n for n, o in zip(spatial, size)):
        return None
    return tuple(o // n for n, o in zip(spatial, size))


def repeat(x: torch.Tensor, factor: tuple[int, ...]) -> torch.Tensor:
    """x [N, C, *S] with spatial axis k repeated factor[k] times in place (each value s times in a row)."""
    for k, s in enumerate(factor):
        if s == 1:
            continue
        axis = 2 + k
        shape = list(x.shape)
        x = x.unsqueeze(axis + 1).expand(*shape[: axis + 1], s, *shape[axis + 1 :])
        shape[axis] *= s
        x = x.reshape(shape)
    return x


def _lowering(stock_func, vec: bool):
    """One overload's lowering: `repeat` at whole factors, else torchax's decomposition (`stock_func`).

    vec: the `.vec` overload (input, output_size or None, scale_factors or None); else the default one
    (input, output_size, *per-axis scales or None), whose given scales must agree with the sizes.
    """

    def lowering(x, size=None, *scales, **kwargs):
        if kwargs or x.ndim < 3:
            return stock_func(x, size, *scales, **kwargs)
        if vec:
            scale_list = scales[0] if scales else None
            if size is None and scale_list is None:
                return stock_func(x, size, *scales)
            whole = factors(x.shape, output_size(x.shape, size, scale_list))
            if whole is not None and size is None and any(float(s) != f for s, f in zip(scale_list, whole)):
                whole = None  # a fractional scale whose output happens to be whole indexes by the scale
        else:
            whole = factors(x.shape, output_size(x.shape, size))
            if whole is not None and any(s is not None and float(s) != f for s, f in zip(scales, whole)):
                whole = None
        if whole is None:
            return stock_func(x, size, *scales)
        return repeat(x, whole)

    lowering.torchax_vae_stock = stock_func
    return lowering


def patch_env(env) -> int:
    """Registers the lowering for each overload of the six ops in `env` (ahead of its decompositions); how many
    it added (0 if done before)."""
    count = 0
    for key, stock in list(env._decomps.items()):
        packet = getattr(key, "overloadpacket", None)
        if packet is None or packet.__name__ not in OPS or key._overloadname not in ("default", "vec"):
            continue
        current = env._ops.get(key)
        if current is not None and hasattr(current.func, "torchax_vae_stock"):
            continue
        env._ops[key] = dataclasses.replace(stock, func=_lowering(stock.func, key._overloadname == "vec"),
                                            is_user_defined=True)
        count += 1
    return count


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())

"""On GPUs: pointwise convolutions as matmuls, and no convolution with an operand of 2^31 bytes or more.

Upstream: torchax lowers every convolution (`aten.convolution`, `aten.conv2d`)
to one `lax.conv_general_dilated`, which XLA:GPU hands to cuDNN whatever its
size. diffusers' `CogVideoXSafeConv3d` splits 3-D convolutions along time
above 2 GB for cuDNN's sake; torchax_vae/patches/safe_conv3d.py removes that (right on
TPU), and Wan's and the upsamplers' convolutions never had it.

What an H100 showed (issue 19, CogVideoX 1.5's 81x768x1360 bf16 decode):
15.5 s of a 16.0 s frame batch in one launch of cuDNN's
`conv2d_grouped_direct_kernel_int64`, whose grid was one thread per element
of a 128x8x768x1360 output. Two layers have that output: the last up block's
first resnet's 1x1x1 `conv_shortcut` (input 256x8x768x1360, 4.28 GB) and its
3x3x3 `conv1` (input with the 2 cached frames 256x10x768x1360, 5.35 GB). Both
are past 2^31 bytes, where cuDNN leaves its implicit-GEMM kernels for a
64-bit-indexed fallback; XLA does not split a convolution itself.

Here, while tracing for a GPU (`TraceOptions.gpu_conv_limit`, torchax_vae/patches/options.py):
- a pointwise convolution (every kernel extent 1, stride 1, no padding, one
  group) is a `dot_general` over channels, which XLA:GPU runs as a cuBLAS
  GEMM: no cuDNN engine choice, no size cliff;
- any other convolution whose input or output would reach the limit (2^31
  bytes) is computed in pieces that stay under it, split along the batch
  axis (frames folded into the batch, as the 2-D upsampler convolutions have
  them), then along the first spatial axis (time, for 3-D convolutions) with
  the kernel's overlap; the pieces are exact, so the result is the same.
The plain reference is torchax's own lowering (`stock`); the rule is tested
against it on CPU (tests/test_gpu_conv.py), and every released size lowered
for CUDA is checked to keep it.

On a GPU mesh, a convolution of a split activation goes through torchax_vae/patches/halo_conv.py
first (each device's shard under this rule, plus its neighbours' edge terms).

TPU keeps torchax's lowering; the rule is applied only to GPU traces. The same
hook serves CPU traces with torchax_vae/patches/cpu_conv.py's rule (weight-bound
convolutions as one matmul).
Still needed while torchax lowers every convolution as one
`conv_general_dilated` (tests/test_gpu_conv.py::test_stock_lowering_is_one_convolution).
"""

import dataclasses

from torchax_vae.patches import cpu_conv, halo_conv
from torchax_vae.patches.conv_rules import LIMIT, bounded, gpu_conv, is_pointwise, pointwise, stock  # noqa: F401 (their old home)
from torchax_vae.patches.options import current
from torchax_vae.patches.torchax_torch213 import import_torchax


def _ruled(stock_func, transposed_at, rest_count):
    """torchax's lowering of one aten op, taken over by `gpu_conv` while tracing with a gpu_conv_limit, and by
    cpu_conv.py's matmul for weight-bound convolutions while tracing with cpu_conv_matmul."""

    def lowering(*args, **kwargs):
        options = current()
        ruled = options.gpu_conv_limit is not None or options.cpu_conv_matmul
        if not ruled or kwargs or len(args) != 6 + rest_count:  # no rule for this trace, or arguments left out
            return stock_func(*args, **kwargs)
        x, w, b, stride, padding, dilation, *rest = args
        transposed = transposed_at is not None and rest[transposed_at]
        if transposed or isinstance(padding, str) or x.ndim != w.ndim:
            return stock_func(*args)
        stride, dilation = tuple(stride), tuple(dilation)
        padding = tuple(padding) * (len(stride) if len(padding) == 1 else 1)
        if options.gpu_conv_limit is None:  # a CPU trace
            if cpu_conv.weight_bound(x.shape, w.shape, stride, padding, dilation, rest[-1]):
                return cpu_conv.as_matmul(x, w, b, stride, padding, dilation)
            return stock_func(*args)
        limit = options.gpu_conv_limit
        if options.halo_conv and options.mesh is not None:
            local = lambda *a: gpu_conv(*a, limit=limit)  # noqa: E731 (the rule, on each device's shard)
            split = halo_conv.sharded(local, x, w, b, stride, padding, dilation, rest[-1], options.mesh, options.grid)
            if split is not None:
                return split
        return gpu_conv(x, w, b, stride, padding, dilation, rest[-1], limit)

    lowering.torchax_vae_stock = stock_func
    return lowering


# aten op -> (where `transposed` sits in the arguments after dilation (None: none), how many follow dilation)
_OPS = {"convolution": (0, 3), "conv2d": (None, 1)}


def patch_env(env) -> int:
    """Routes torchax's convolution lowerings in `env` through the GPU rule; how many it replaced (0 if done before).

    Outside a GPU trace the replaced lowerings call torchax's own, unchanged.
    """
    import torch

    count = 0
    for name, (transposed_at, rest_count) in _OPS.items():
        key = getattr(torch.ops.aten, name)
        op = env._ops[key]  # torchax registers both; a KeyError here means torchax changed how it lowers convolutions
        if hasattr(op.func, "torchax_vae_stock"):
            continue
        env._ops[key] = dataclasses.replace(op, func=_ruled(op.func, transposed_at, rest_count))
        count += 1
    return count


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())

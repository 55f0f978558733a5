"""On CPU: weight-bound convolutions as one matmul over gathered patches (im2col).

Upstream: torchax lowers every convolution to one `lax.conv_general_dilated`,
and frame_conv.py's per-frame 2-D convolutions are `lax.conv_general_dilated`
too. XLA:CPU runs those well where activations dominate, and very badly where
the weights do: few output positions, many channels. LTX-2's encoder mid
block (3x3x3, 2048 -> 2048 channels on 2x2x3 latents) took 23.6 s in
XLA:CPU against PyTorch's 0.32 s; one such convolution alone, 5.6 s against
PyTorch's 0.085 s, and 0.055 s gathered and multiplied here (2026-11-23,
2-core AMD EPYC). That is LTX's CPU cliff (docs/results/performance.md).

Here, while tracing for CPU (`TraceOptions.cpu_conv_matmul`), a
convolution (one group) with fewer output positions (batch x output
spatial size) than half its output channels is computed as: the input
padded, the kernel's shifted strided views stacked on a new axis
([N, C, K, *out]), and one `dot_general` with the weights [O, C, K],
accumulating in fp32. The patch matrix is then smaller than the weights,
so gathering costs less than reading them. Every other convolution keeps
torchax's lowering (measured: at 7x8x12 with 512 channels the two are even,
and at larger spatial sizes the stock convolution is faster).

The plain reference is `gpu_conv.stock`; tests/test_cpu_conv.py checks the
rule against it (2-D and 3-D, strides, dilation, padding, bias, bf16) and
where it applies. Needed while torchax lowers every convolution as one
`conv_general_dilated` (tests/test_gpu_conv.py::test_stock_lowering_is_one_convolution)
and XLA:CPU runs weight-bound ones as it does (`scripts/bench.py --speed --config ltx2`).
"""

import itertools
import math

import jax
import jax.numpy as jnp


def out_extent(size, k, s, p, d) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def weight_bound(x_shape, w_shape, stride, padding, dilation, groups) -> bool:
    """Whether the rule takes this convolution: one group, fewer output positions than half the out channels."""
    if groups != 1 or len(x_shape) != len(w_shape):
        return False
    out = map(out_extent, x_shape[2:], w_shape[2:], stride, padding, dilation)
    return 2 * x_shape[0] * math.prod(out) < w_shape[0]


def as_matmul(x, w, b, stride, padding, dilation):
    """The convolution of N C *S `x` by O C *K `w` (one group) as a matmul over the kernel's shifted views."""
    spatial = len(w.shape) - 2
    xp = jnp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    out = tuple(map(out_extent, x.shape[2:], w.shape[2:], stride, padding, dilation))
    views = []
    for offsets in itertools.product(*(range(k) for k in w.shape[2:])):
        start = (0, 0) + tuple(o * d for o, d in zip(offsets, dilation))
        limit = x.shape[:2] + tuple(s0 + st * (n - 1) + 1 for s0, st, n in zip(start[2:], stride, out))
        views.append(jax.lax.slice(xp, start, limit, (1, 1) + tuple(stride)))
    cols = jnp.stack(views, axis=2)  # N, C, K, *out
    kernel = w.reshape(w.shape[0], w.shape[1], -1)  # O, C, K (row-major, as itertools.product walks the kernel)
    # weights first, as jnp.einsum orders it: XLA:CPU ran the other order 18x slower (1.03 s against 0.057 s
    # for 2048 -> 2048 channels on 2x2x3)
    y = jax.lax.dot_general(kernel, cols, (((1, 2), (1, 2)), ((), ())), preferred_element_type=jnp.float32)
    y = jnp.moveaxis(y, 0, 1)  # O, N, *out -> N, O, *out
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * spatial).astype(jnp.float32)
    return y.astype(x.dtype)

"""3-D convolutions as sums of per-frame 2-D convolutions, on XLA:CPU.

Upstream: torchax lowers `F.conv3d` (every CogVideoXSafeConv3d) to one
`lax.conv_general_dilated` with three spatial dimensions. XLA:CPU runs that
through a generic path: the official decoder's 3x3x3 convolutions of 128
channels at 64x96 run at about 92 GFLOP/s on a 2-core x86 CPU, where PyTorch's
oneDNN kernel gets about 225 (`scripts/bench.py --speed --profile`); they are
87 % of a decode.

Here: for a time kernel of kt taps, `conv3d_by_frames` slices the kt
time-shifted frame stacks, runs each as a batch of 2-D convolutions (N x T
frames, which XLA:CPU lowers to its optimized 2-D kernel: about 150 GFLOP/s on
the same shapes) and sums them, accumulating in float32. The plain reference is
the 3-D convolution itself (`conv3d_reference`).

Only while tracing for a CPU device (`TraceOptions.cpu_kernels`, torchax_vae/patches/options.py):
accelerators get the stock 3-D convolution, which their compilers handle
natively and which this was not measured against.

Still needed while torchax lowers F.conv3d to a single 3-D convolution
(tests/test_patches.py::test_stock_conv3d_is_one_3d_convolution).
"""

import functools

import jax
import jax.numpy as jnp
import torch
from torch import nn

from torchax_vae.patches import cpu_conv
from torchax_vae.patches.options import current
from torchax_vae.patches.safe_conv3d import PlainConv3d
from torchax_vae.patches.torchax_torch213 import import_torchax

def conv3d_reference(x, w, b=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1):
    """F.conv3d of NCTHW x and OITHW w, as torchax lowers it: one 3-D convolution."""
    out = jax.lax.conv_general_dilated(
        x, w, tuple(stride), [(p, p) for p in padding], rhs_dilation=tuple(dilation),
        dimension_numbers=("NCDHW", "OIDHW", "NCDHW"), feature_group_count=groups,
    )
    return out if b is None else out + b.reshape(1, -1, 1, 1, 1).astype(out.dtype)


STEP_BYTES = 256 * 2**20  # input frames one step of the frame loop may convolve at once (see conv3d_by_frames)


def conv3d_by_frames(x, w, b=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1):
    """`conv3d_reference`, computed as a sum over the kt time taps of 2-D convolutions over all frames.

    When the frames exceed STEP_BYTES (480x720 frames of 128 channels: 177 MB
    each), the output frames are computed a few at a time in a loop that
    writes them into the output in place: then XLA holds the kt partial sums and
    channel-last copies of a few frames, not of all of them (a 9x480x720
    128-channel convolution: 4.1 GB of temp memory instead of 8.0 on
    XLA:CPU's memory scheduler). Smaller inputs run all frames in one step,
    which is as fast or faster.
    """
    (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = stride, padding, dilation
    if pt:
        x = jnp.pad(x, ((0, 0), (0, 0), (pt, pt), (0, 0), (0, 0)))
    n, c, t, h, width = x.shape
    kt = w.shape[2]
    t_out = (t - dt * (kt - 1) - 1) // st + 1
    if t_out < 1:
        raise ValueError(f"conv3d input of {t} frames (padded) is shorter than the kernel's {dt * (kt - 1) + 1}")
    kernel = w.transpose(2, 3, 4, 1, 0)  # kT, kH, kW, I, O
    accumulate = jnp.promote_types(x.dtype, jnp.float32)

    def frames_out(window, count):
        """The `count` output frames of an NCTHW window of input frames, NCTHW in x's dtype."""
        # Channels last, once: a time slice is then a stack of whole NHWC frames, the layout XLA:CPU's
        # 2-D convolution wants, so no tap needs its own transpose (nor the sum its own).
        frames = window.transpose(0, 2, 3, 4, 1)
        out = None
        for k in range(kt):
            taps = jax.lax.slice_in_dim(frames, k * dt, k * dt + st * (count - 1) + 1, stride=st, axis=1)
            y = jax.lax.conv_general_dilated(
                taps.reshape(n * count, h, width, c), kernel[k], (sh, sw), [(ph, ph), (pw, pw)],
                rhs_dilation=(dh, dw), dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups,
                preferred_element_type=accumulate,
            )
            out = y if out is None else out + y
        if b is not None:
            out = out + b.astype(accumulate)
        return out.reshape(n, count, *out.shape[1:]).transpose(0, 4, 1, 2, 3).astype(x.dtype)

    step = _frames_per_step(t_out, n * h * width * c * x.dtype.itemsize) if st == 1 else t_out
    if step == t_out:
        return frames_out(x, t_out)
    span = step + dt * (kt - 1)  # input frames one step reads

    def body(i, out):
        window = jax.lax.dynamic_slice_in_dim(x, i * step, span, axis=2)
        return jax.lax.dynamic_update_slice_in_dim(out, frames_out(window, step), i * step, axis=2)

    out = jnp.zeros((n, w.shape[0], t_out, *frames_out_shape(h, width, w.shape[3:], (sh, sw), (ph, pw), (dh, dw))), x.dtype)
    return jax.lax.fori_loop(0, t_out // step, body, out)


def _frames_per_step(t_out: int, frame_bytes: int) -> int:
    """The most output frames per loop step (a divisor of t_out) whose input stays within STEP_BYTES; at least 1."""
    if t_out * frame_bytes <= STEP_BYTES:
        return t_out
    return max(d for d in range(1, t_out + 1) if t_out % d == 0 and (d * frame_bytes <= STEP_BYTES or d == 1))


def frames_out_shape(h, w, kernel, stride, padding, dilation) -> tuple[int, int]:
    """Output height and width of a 2-D convolution."""
    return tuple((size + 2 * p - d * (k - 1) - 1) // s + 1 for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation))


@functools.cache
def _torch_conv3d_by_frames():
    return import_torchax().interop.torch_view(conv3d_by_frames)


def _forward(conv: nn.Conv3d, input: torch.Tensor, stock) -> torch.Tensor:
    """conv(input) by `conv3d_by_frames` when tracing with cpu_kernels, else by `stock` (nn.Conv3d's forward)."""
    if not current().cpu_kernels or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
        return stock(input)
    if current().cpu_conv_matmul and cpu_conv.weight_bound(tuple(input.shape), tuple(conv.weight.shape), conv.stride,
                                                            conv.padding, conv.dilation, conv.groups):
        return stock(input)  # one matmul through torchax's convolution lowering (torchax_vae/patches/cpu_conv.py) instead
    return _torch_conv3d_by_frames()(
        input, conv.weight, conv.bias, tuple(conv.stride), tuple(conv.padding), tuple(conv.dilation), conv.groups
    )


class FrameConv3d(PlainConv3d):
    """PlainConv3d whose convolution is `conv3d_by_frames` when tracing with cpu_kernels."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return _forward(self, input, super().forward)


class _ByFramesConv3d(nn.Conv3d):
    """nn.Conv3d's forward, by frames when tracing with cpu_kernels: what WanCausalConv3d's `super().forward` reaches."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return _forward(self, input, super().forward)


@functools.cache
def by_frames(cls: type) -> type:
    """The class whose convolution runs by frames for an nn.Conv3d class (its own forward otherwise unchanged).

    A family's causal convolution that subclasses nn.Conv3d (WanCausalConv3d,
    QwenImageCausalConv3d: padding and cache, then `super().forward`) gets
    `_ByFramesConv3d` after it in the MRO; a plain nn.Conv3d (inside HunyuanVideo's
    and LTX's causal convolutions) becomes `_ByFramesConv3d` itself.
    """
    if cls is PlainConv3d:
        return FrameConv3d
    if cls is nn.Conv3d:
        return _ByFramesConv3d
    return type(f"Frame{cls.__name__}", (cls, _ByFramesConv3d), {"__module__": __name__})


_DONE = (FrameConv3d, _ByFramesConv3d)


def patch(model: nn.Module) -> int:
    """Makes every nn.Conv3d of `model` (PlainConv3d after `safe_conv3d.patch`, a family's causal convolution)
    run by frames when tracing with cpu_kernels (`by_frames`); returns how many."""
    count = 0
    for module in model.modules():
        if isinstance(module, nn.Conv3d) and not isinstance(module, _DONE):
            module.__class__ = by_frames(type(module))
            count += 1
    return count

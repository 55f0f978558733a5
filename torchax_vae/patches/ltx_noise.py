"""The LTX resnet blocks' injected noise taken from the program's inputs, in the order PyTorch draws it.

Upstream: diffusers' `LTXVideoResnetBlock3d.forward` (LTX-Video 0.9.1's
decoder, `decoder_inject_noise`) and `LTX2VideoResnetBlock3d.forward` (LTX-2's)
add `torch.randn((height, width), generator=generator)` times a learned
per-channel scale after each of their two convolutions. Their decoders never
pass a generator, so the noise comes from torch's global generator, two draws
per injecting block, in call order.

Traced as is through torchax, `torch.randn` would become torchax's own JAX
random numbers: a different stream, fixed into the program. Here the noise is
an input of the program instead: the caller draws it on the host with torch's
global generator, exactly as the PyTorch model would (same shapes, dtype and
order; `noise_shapes` finds them), and passes the tensors in. While a patched
block runs inside `feeding(noise)`, each `torch.randn` it makes returns the
next of those tensors (checked against the shape asked for); outside it the
block is diffusers' own.

Needed as long as the decoder draws its noise inside forward
(tests/test_ltx.py::test_noise_injection_follows_torchs_global_generator).
"""

import contextlib
import contextvars
import functools

import torch
from diffusers.models.autoencoders.autoencoder_kl_ltx import LTXVideoResnetBlock3d
from torch import nn
from torch.overrides import TorchFunctionMode

# A context variable, not an argument: the noise is drawn inside diffusers' own LTX resnet forward, which takes no
# argument of ours; set only while one decoder call traces or runs.
_FEED: contextvars.ContextVar = contextvars.ContextVar("ltx_noise_feed", default=None)


class _Feed(TorchFunctionMode):
    """torch.randn -> the next given tensor (feed) or a recorded meta draw (record)."""

    def __init__(self, tensors=None):
        super().__init__()
        self.tensors = None if tensors is None else list(tensors)
        self.shapes: list[tuple[tuple[int, ...], torch.dtype]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch.randn:
            return func(*args, **kwargs)
        shape = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else tuple(args)
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
        index = len(self.shapes)
        self.shapes.append((shape, dtype))
        if self.tensors is None:  # recording: the draw PyTorch would make, without memory
            return torch.empty(shape, dtype=dtype, device="meta")
        if index >= len(self.tensors):
            raise RuntimeError(f"LTX noise injection drew {index + 1} noise tensors; {len(self.tensors)} were given")
        given = self.tensors[index]
        if tuple(given.shape) != shape:
            raise RuntimeError(f"LTX noise draw {index} has shape {shape}; the tensor given has {tuple(given.shape)}")
        return given


@contextlib.contextmanager
def feeding(tensors):
    """Inside: the patched blocks' `torch.randn` calls return `tensors` in order (torchax tensors while tracing)."""
    token = _FEED.set(_Feed(tensors))
    try:
        yield _FEED.get()
    finally:
        _FEED.reset(token)


@contextlib.contextmanager
def recording():
    """Inside: the patched blocks' draws are recorded (shape, dtype) and made on the meta device."""
    token = _FEED.set(_Feed())
    try:
        yield _FEED.get()
    finally:
        _FEED.reset(token)


class _Fed:
    """Mixed in before a resnet block class: its forward inside the active feed, when one is."""

    def forward(self, *args, **kwargs):
        feed = _FEED.get()
        if feed is None:
            return super().forward(*args, **kwargs)
        with feed:  # innermost mode: sees the block's torch.randn before torchax does
            return super().forward(*args, **kwargs)


class FedNoiseResnetBlock3d(_Fed, LTXVideoResnetBlock3d):
    """LTXVideoResnetBlock3d whose injected noise comes from `feeding` / `recording` when one is active."""


@functools.cache
def _fed_classes() -> dict[type, type]:
    """diffusers' noise-injecting block classes -> their fed classes (LTX-2's where diffusers has it, >= 0.37)."""
    classes = {LTXVideoResnetBlock3d: FedNoiseResnetBlock3d}
    try:
        from diffusers.models.autoencoders.autoencoder_kl_ltx2 import LTX2VideoResnetBlock3d
    except ImportError:
        return classes
    classes[LTX2VideoResnetBlock3d] = type("FedNoiseLTX2VideoResnetBlock3d", (_Fed, LTX2VideoResnetBlock3d), {
        "__doc__": "LTX2VideoResnetBlock3d whose injected noise comes from `feeding` / `recording` when one is active.",
        "__module__": __name__,
    })
    return classes


def patch(model: nn.Module) -> int:
    """Makes every noise-injecting LTX resnet block in `model` take its noise from a feed; returns how many."""
    fed = _fed_classes()
    count = 0
    for module in model.modules():
        if type(module) in fed and module.per_channel_scale1 is not None:
            module.__class__ = fed[type(module)]
            count += 1
    return count

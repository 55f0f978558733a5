"""Antialiased bilinear and bicubic resizing (`F.interpolate(..., antialias=True)`) as PyTorch computes it.

Upstream: torchax 0.0.13 lowers `aten._upsample_bilinear2d_aa` and `aten._upsample_bicubic2d_aa` through its copy
of JAX's `scale_and_translate`, and both fail before computing anything: `TypeError: 'tuple' object is not
callable` in `compute_weight_mat` with an output size, `'float' object is not subscriptable` with scale factors.
The 0.0.14 nightlies (2026-10-26) lower the output-size form (within 4.8e-6 of torch) but still fail with scale factors.
Transformers' DINOv2 resizes its position embeddings with antialiased bicubic interpolation
(`interpolate_pos_encoding`), so diffusers' `AutoencoderRAE` could not encode on JAX (docs/limits.md).

Here each axis gets the weight matrix of PyTorch's separable antialiased kernel (ATen's UpSampleKernel.cpp,
`_compute_weights_aa`, itself Pillow's): the scale from the sizes or the given scale factors (ATen's
`area_pixel_compute_scale`), a support of half the filter's width times the scale when downsampling, each output
pixel's window of input pixels around its centre, the filter's values normalised to sum 1. The filters are the
triangle and Keys' cubic with a = -0.5. The matrices are built in float32 on the host, as ATen computes its weights
for float inputs, from the static shapes, and applied as two contractions (width, then height, ATen's order) in
float32 at full precision; the result takes the input's dtype. Still needed while torchax's lowering fails
(tests/test_patches.py::test_antialias_resize_*).
"""

import math

import numpy as np
import torch

from torchax_vae.patches.torchax_torch213 import import_torchax

# op name -> (the filter's width in input pixels at scale 1, the filter)
FILTERS = {
    "_upsample_bilinear2d_aa": (2, lambda x: np.where(x < 1, 1 - x, 0)),
    "_upsample_bicubic2d_aa": (4, lambda x: np.where(  # Keys' cubic convolution, a = -0.5 (ATen's aa_filter)
        x < 1, ((np.float32(1.5) * x - np.float32(2.5)) * x * x + 1),
        np.where(x < 2, ((np.float32(-0.5) * x + np.float32(2.5)) * x - 4) * x + 2, 0))),
}


def _scale(in_size: int, out_size: int, align_corners: bool, given) -> np.float32:
    """ATen's area_pixel_compute_scale for float inputs."""
    if align_corners:
        return np.float32(in_size - 1) / np.float32(out_size - 1) if out_size > 1 else np.float32(0)
    if given is not None and given > 0:
        return np.float32(1.0 / given)
    return np.float32(in_size) / np.float32(out_size)


def weights(in_size: int, out_size: int, align_corners: bool, given_scale, op: str) -> np.ndarray:
    """[out_size, in_size] float32: output pixel i as a weighted sum of input pixels, as ATen weighs them.

    Each step rounds where ATen's C++ does for a float input: the centre, the window's ends and the filter's
    argument come from float values with 0.5 added in double; the filter and the normalising sum are float32."""
    width, filt = FILTERS[op]
    scale = _scale(in_size, out_size, align_corners, given_scale)
    one = np.float32(1)
    support = np.float32(width * 0.5) * scale if scale >= 1 else np.float32(width * 0.5)
    invscale = one / scale if scale >= 1 else one
    widest = math.ceil(support) * 2 + 1
    matrix = np.zeros((out_size, in_size), np.float32)
    for i in range(out_size):
        center = np.float32(float(scale) * (i + 0.5))
        first = max(int(float(center - support) + 0.5), 0)
        size = min(max(min(int(float(center + support) + 0.5), in_size) - first, 0), widest)
        offsets = np.arange(first, first + size, dtype=np.float32) - center  # (int - float: float in C++)
        w = filt(np.abs((offsets.astype(np.float64) + 0.5) * float(invscale)).astype(np.float32)).astype(np.float32)
        total = np.float32(0)
        for value in w:  # ATen's running float sum
            total = np.float32(total + value)
        matrix[i, first:first + size] = w / total if total != 0 else w
    return matrix


def _resize(x, size, align_corners: bool, scales, op: str):
    """x [N, C, H, W] (a torchax tensor) resized to size (H', W'); scales: the given per-axis scale factors."""
    import jax.numpy as jnp
    from jax import lax

    from torchax.interop import jax_view, torch_view

    a = jax_view(x)
    height = jnp.asarray(weights(a.shape[2], size[0], align_corners, scales[0], op))
    width = jnp.asarray(weights(a.shape[3], size[1], align_corners, scales[1], op))
    high = lax.Precision.HIGHEST
    out = jnp.einsum("nchw,vw->nchv", a.astype(jnp.float32), width, precision=high)
    out = jnp.einsum("nchv,uh->ncuv", out, height, precision=high)
    return torch_view(out.astype(a.dtype))


def _default(op: str):
    def lowering(x, output_size, align_corners, scales_h=None, scales_w=None):
        return _resize(x, [int(n) for n in output_size], bool(align_corners), (scales_h, scales_w), op)
    lowering.torchax_vae_antialias = op
    return lowering


def _vec(op: str):
    def lowering(x, output_size, align_corners, scale_factors):
        if output_size is not None:
            return _resize(x, [int(n) for n in output_size], bool(align_corners), (None, None), op)
        size = [int(math.floor(n * float(s))) for n, s in zip(x.shape[2:], scale_factors)]
        return _resize(x, size, bool(align_corners), tuple(float(s) for s in scale_factors), op)
    lowering.torchax_vae_antialias = op
    return lowering


def patch_env(env) -> int:
    """Registers the lowerings of both ops' two overloads in `env`; how many it added (0 if done before)."""
    count = 0
    for op in FILTERS:
        packet = getattr(torch.ops.aten, op)
        for overload, make in (("default", _default), ("vec", _vec)):
            key = getattr(packet, overload)
            current = env._ops.get(key)
            if current is not None and getattr(current.func, "torchax_vae_antialias", None) == op:
                continue
            env.override_op_definition(key, make(op))
            count += 1
    return count


def patch() -> int:
    """`patch_env` on torchax's default environment (the one every lowering here traces in)."""
    return patch_env(import_torchax().default_env())

"""torchax_vae/patches/cpu_conv.py: weight-bound convolutions as one matmul on CPU, against torchax's own lowering."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from torchax_vae import patches
from torchax_vae.patches import cpu_conv, gpu_conv

# (x shape, w shape, stride, padding, dilation): each weight-bound (few output positions, many out channels)
CASES = [
    ((1, 8, 4, 2, 3), (40, 8, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1)),  # LTX's causal 3x3x3 (time padded outside)
    ((1, 6, 5, 4, 5), (64, 6, 3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)),  # strided, padded in time too
    ((1, 6, 7, 3, 4), (48, 6, 3, 1, 3), (1, 1, 2), (0, 0, 1), (2, 1, 1)),  # dilation in time, uneven kernel
    ((2, 5, 3, 4), (64, 5, 3, 3), (1, 1), (1, 1), (1, 1)),  # 2-D, a batch of two
    ((1, 8, 2, 2, 3), (32, 8, 1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1)),  # pointwise
]


def _arrays(case, dtype=jnp.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.standard_normal(case[0]), dtype)
    w = jnp.asarray(rng.standard_normal(case[1]) * 0.2, dtype)
    b = jnp.asarray(rng.standard_normal(case[1][0]), dtype)
    return x, w, b


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_matmul_equals_the_convolution(case, bias):
    x, w, b = _arrays(case)
    b = b if bias else None
    stride, padding, dilation = case[2:]
    assert cpu_conv.weight_bound(x.shape, w.shape, stride, padding, dilation, 1)
    expected = gpu_conv.stock(x, w, b, stride, padding, dilation, 1)
    actual = cpu_conv.as_matmul(x, w, b, stride, padding, dilation)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    err = float(jnp.abs(actual - expected).max())
    assert err <= 1e-5, f"max |Δ| {err:.3g}"


def test_bf16_accumulates_in_fp32():
    """In bf16 the matmul is within bf16 rounding of the fp32 convolution, as the stock bf16 convolution is."""
    case = CASES[0]
    x, w, b = _arrays(case, jnp.bfloat16)
    stride, padding, dilation = case[2:]
    exact = gpu_conv.stock(*(a.astype(jnp.float32) for a in (x, w, b)), stride, padding, dilation, 1)
    ours = cpu_conv.as_matmul(x, w, b, stride, padding, dilation)
    stock = gpu_conv.stock(x, w, b, stride, padding, dilation, 1)
    assert ours.dtype == jnp.bfloat16
    ours_err = float(jnp.abs(ours.astype(jnp.float32) - exact).max())
    stock_err = float(jnp.abs(stock.astype(jnp.float32) - exact).max())
    assert ours_err <= max(2 * stock_err, 1e-2), (ours_err, stock_err)


def test_only_weight_bound_convolutions_are_taken():
    # LTX-2's encoder mid block: 12 output positions, 2048 channels; a 480p frame batch: far from it
    assert cpu_conv.weight_bound((1, 2048, 4, 2, 3), (2048, 2048, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1)
    assert not cpu_conv.weight_bound((1, 128, 10, 60, 90), (128, 128, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1)
    assert not cpu_conv.weight_bound((1, 512, 7, 8, 12), (512, 512, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1)
    assert not cpu_conv.weight_bound((1, 2048, 4, 2, 3), (2048, 1024, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 2)


def _lowered(conv, shape, options):
    env = patches.import_torchax().default_env()
    patches.gpu_conv.patch()
    x = jax.ShapeDtypeStruct(shape, jnp.float32)
    weights = {k: jax.ShapeDtypeStruct(tuple(v.shape), jnp.float32) for k, v in conv.state_dict().items()}

    def f(weights, x):
        weights, x = env.j2t_iso((weights, x))
        with env, torch.no_grad(), patches.options.tracing(options):
            return env.t2j_iso(torch.func.functional_call(conv, weights, (x,)))

    return jax.jit(f).lower(weights, x).as_text()


def test_cpu_traces_take_the_rule_through_torchax_and_frame_conv():
    """A CPU trace lowers a weight-bound nn.Conv3d to one dot_general, also where frame_conv would split it by
    frames; others keep their convolutions; a TPU trace keeps torchax's convolution."""
    torch.manual_seed(0)
    cpu = patches.options.TraceOptions.for_platform("cpu")
    wide = torch.nn.Conv3d(8, 64, 3, padding=(0, 1, 1))
    hlo = _lowered(wide, (1, 8, 4, 2, 3), cpu)
    assert "stablehlo.convolution" not in hlo and hlo.count("stablehlo.dot_general") == 1
    framed = patches.frame_conv.by_frames(torch.nn.Conv3d)(8, 64, 3, padding=(0, 1, 1))
    framed.load_state_dict(wide.state_dict())
    hlo = _lowered(framed, (1, 8, 4, 2, 3), patches.options.TraceOptions.for_platform("cpu", cpu_kernels=True))
    assert "stablehlo.convolution" not in hlo and hlo.count("stablehlo.dot_general") == 1
    assert "stablehlo.convolution" in _lowered(wide, (1, 8, 4, 32, 48), cpu)  # activation-bound: stock
    assert "stablehlo.convolution" in _lowered(wide, (1, 8, 4, 2, 3), patches.options.TraceOptions.for_platform("tpu"))

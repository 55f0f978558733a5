"""Each patch: still needed upstream, correct, and applied only when asked for."""

import importlib.metadata
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from diffusers.models.autoencoders.autoencoder_kl_cogvideox import (
    CogVideoXCausalConv3d,
    CogVideoXSafeConv3d,
    CogVideoXSpatialNorm3D,
)
from diffusers.models.downsampling import CogVideoXDownsample3D
from torch import nn

from torchax_vae import patches
from torchax_vae.placement import tiling
from torchax_vae.engine.convert import to_jax
from helpers import MODELS, TOLERANCE, assert_close, needs, random_vae
from torchax_vae.patches import (
    frame_conv,
    group_norm,
    pointwise_conv_cache,
    safe_conv3d,
    spatial_norm,
    tile_mask,
    time_pool,
    torchax_torch213,
    wan_upsample,
)

# |Δ| <= atol + rtol * |reference|; bf16: the output's own rounding (half an ulp, 2^-9 relative).
GROUP_NORM_TOL = {jnp.float32: (1e-5, 0.0), jnp.bfloat16: (1e-5, 2.0**-8)}


def lowered_hlo(module: nn.Module, *shapes) -> str:
    """StableHLO text of module traced through torchax on abstract inputs (nothing runs)."""
    env = patches.import_torchax().default_env()
    weights = {name: to_jax(p) for name, p in module.named_parameters()}

    def jax_fn(weights, *arrays):
        weights, arrays = env.j2t_iso((weights, arrays))
        with env, torch.no_grad():
            return env.t2j_iso(torch.func.functional_call(module, weights, arrays))

    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return jax.jit(jax_fn).lower(weights, *args).as_text()


# ----- torchax_torch213 -----


INSTALLED = importlib.metadata.version("torchax"), torch.__version__
NEEDED = torchax_torch213.needed(*INSTALLED)


@pytest.mark.parametrize(
    "torchax_version, torch_version, expected",
    [
        ("0.0.13", "2.13.0+cpu", True),
        ("0.0.13", "2.14.1", True),
        ("0.0.13.dev20260616", "2.13.0", True),
        ("0.0.13", "2.11.0+cu130", False),
        ("0.0.14.dev20261026", "2.13.0+cpu", False),
        ("0.0.14", "2.15.0", False),
    ],
)
def test_the_torch213_patch_is_needed_only_for_old_torchax_under_new_torch(torchax_version, torch_version, expected):
    assert torchax_torch213.needed(torchax_version, torch_version) is expected


@pytest.mark.skipif(not NEEDED, reason=f"torchax {INSTALLED[0]} under torch {INSTALLED[1]} imports as it is")
def test_torchax_still_fails_to_import_unpatched():
    result = subprocess.run([sys.executable, "-c", "import torchax"], capture_output=True, text=True)
    assert result.returncode != 0, "torchax imports without the patch: drop torchax_vae/patches/torchax_torch213.py"
    assert "has no overload name" in result.stderr


@pytest.mark.skipif(not NEEDED, reason=f"torchax {INSTALLED[0]} under torch {INSTALLED[1]} imports as it is")
def test_torchax_imports_with_patch_and_records_removed_overloads():
    torchax = patches.import_torchax()
    torchax.default_env()  # loads torchax's op tables, which name the removed overloads too
    assert {"aten::prod.dim_Dimname", "aten::index_copy.dimname", "aten::std.names_dim"} <= torchax_torch213.REMOVED_OVERLOADS
    with pytest.raises(AttributeError):  # the hook is gone once torchax is imported
        torch.ops.aten.prod.dim_Dimname


def test_the_hook_stands_in_for_removed_aten_ops_only_while_it_is_on():
    # torch 2.14 removed whole ops torchax 0.0.13 names (aten.cholesky, aten.qr), not only overloads
    with torchax_torch213._tolerate_removed_overloads():
        op = torch.ops.aten.no_such_op_in_any_torch
        assert isinstance(op, torchax_torch213.RemovedOp)
        assert isinstance(op.default, torchax_torch213.RemovedOverload)
        with pytest.raises(RuntimeError, match="was removed from torch"):
            op.default()
        with pytest.raises(AttributeError):  # only aten's namespace is tolerated
            torch.ops.prims.no_such_op_in_any_torch
    with pytest.raises(AttributeError):
        torch.ops.aten.no_such_op_in_any_torch
    torchax_torch213.REMOVED_OVERLOADS.discard("aten::no_such_op_in_any_torch")
    torchax_torch213.REMOVED_OVERLOADS.discard("aten::no_such_op_in_any_torch.default")


@pytest.mark.skipif(NEEDED, reason=f"torchax {INSTALLED[0]} under torch {INSTALLED[1]} needs the patch")
def test_torchax_that_imports_as_it_is_gets_no_hook():
    # The other path (CI's torchax-nightly job): torchax imports plainly, nothing is papered over.
    result = subprocess.run([sys.executable, "-c", "import torchax"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    patches.import_torchax().default_env()
    assert torchax_torch213.REMOVED_OVERLOADS == set()


def test_importing_the_package_patches_nothing(tmp_path):
    code = (
        "import sys, torch; from torch._ops import OpOverloadPacket as P; before = P.__getattr__; "
        "import torchax_vae, torchax_vae.patches; "
        "assert 'torchax' not in sys.modules, 'importing torchax_vae imported torchax'; "
        "assert P.__getattr__ is before"
    )
    # cwd outside the checkout: the installed package is what gets imported.
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr



def test_the_first_import_is_quiet_and_filters_nothing_after(tmp_path):
    """`from torchax_vae import TorchaxVAE` prints nothing; under diffusers 0.36 (CI's job 2) that import would print
    diffusers' two Kandinsky "CUDA is not available" warnings, kept out for that import only."""
    code = ("import warnings; before = list(warnings.filters); from torchax_vae import TorchaxVAE; "
            "assert warnings.filters == before, 'the import left a warnings filter behind'")
    result = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr[-3000:]

# ----- group_norm -----


@pytest.mark.parametrize(
    "shape,groups",
    [((2, 8, 3, 5, 7), 2), ((1, 64, 4, 6, 6), 32), ((2, 6, 9, 9), 3), ((3, 4, 10), 4)],
)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_group_norm_kernel_matches_reference(shape, groups, dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, shape).astype(np.float32)  # offset mean: catches one-pass variance
    weight = rng.normal(size=shape[1]).astype(np.float32)
    bias = rng.normal(size=shape[1]).astype(np.float32)
    x, weight, bias = (jnp.asarray(a, dtype) for a in (x, weight, bias))
    actual = group_norm.group_norm(x, groups, weight, bias, 1e-6)
    assert actual.dtype == dtype
    # The reference sees exactly the (rounded) values the kernel saw.
    expected = group_norm.group_norm_reference(*(np.asarray(a.astype(jnp.float32)) for a in (x,)), groups,
                                               np.asarray(weight.astype(jnp.float32)), np.asarray(bias.astype(jnp.float32)), 1e-6)
    excess = np.abs(np.asarray(actual.astype(jnp.float32)) - expected)
    atol, rtol = GROUP_NORM_TOL[dtype]
    worst = float(excess.max())
    assert (excess <= atol + rtol * np.abs(expected)).all(), f"max |Δ| = {worst:.3g} vs reference ({dtype.__name__}, {shape})"


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_masked_group_norm_matches_reference_on_the_valid_region(dtype):
    rng = np.random.default_rng(2)
    x = rng.normal(1.0, 2.0, (2, 8, 3, 6, 7)).astype(np.float32)
    x[..., 4:, :] = 1e3  # what lies outside the valid region must not matter
    x[..., 5:] = -1e3
    weight, bias = rng.normal(size=8).astype(np.float32), rng.normal(size=8).astype(np.float32)
    mask = (np.arange(6)[:, None] < 4) & (np.arange(7)[None, :] < 5)
    xj, wj, bj = (jnp.asarray(a, dtype) for a in (x, weight, bias))
    actual = np.asarray(group_norm.group_norm(xj, 4, wj, bj, 1e-6, mask=jnp.asarray(mask)).astype(jnp.float32))[..., :4, :5]
    as_seen = (np.asarray(a.astype(jnp.float32)) for a in (xj, wj, bj))
    x_seen, w_seen, b_seen = as_seen
    expected = group_norm.group_norm_reference(x_seen[..., :4, :5], 4, w_seen, b_seen, 1e-6)
    excess = np.abs(actual - expected)
    atol, rtol = GROUP_NORM_TOL[dtype]
    assert (excess <= atol + rtol * np.abs(expected)).all(), f"max |Δ| = {excess.max():.3g} (masked, {dtype.__name__})"


def test_group_norm_reference_is_torch_group_norm():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 8, 3, 4, 5)).astype(np.float32)
    w, b = rng.normal(size=8).astype(np.float32), rng.normal(size=8).astype(np.float32)
    expected = torch.nn.functional.group_norm(torch.from_numpy(x).double(), 4, torch.from_numpy(w).double(), torch.from_numpy(b).double(), 1e-6)
    actual = group_norm.group_norm_reference(x, 4, w, b, 1e-6)
    assert np.abs(actual - expected.numpy()).max() < 1e-10


@pytest.mark.parametrize("dots", [False, True], ids=["reductions", "dots for TPUs"])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_per_frame_group_norm_matches_reference_frame_by_frame(dtype, dots):
    """Mochi's per-frame GroupNorm (MochiChunkedGroupNorm3D) as one reduction (or, as Mochi traces it for TPUs,
    dots with ones): each frame is normalized alone."""
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(0.5, 2.0, (2, 8, 5, 6, 7)) * np.linspace(1, 4, 5)[:, None, None], dtype)
    w, b = (jnp.asarray(rng.normal(size=8), dtype) for _ in range(2))
    with patches.options.tracing(patches.options.TraceOptions(dot_statistics=dots)):
        actual = np.asarray(group_norm.group_norm(x, 4, w, b, 1e-6, per_frame=True).astype(jnp.float32))
    x_seen, w_seen, b_seen = (np.asarray(a.astype(jnp.float32)) for a in (x, w, b))
    for t in range(x.shape[2]):
        expected = group_norm.group_norm_reference(x_seen[:, :, t], 4, w_seen, b_seen, 1e-6)
        excess = np.abs(actual[:, :, t] - expected)
        atol, rtol = GROUP_NORM_TOL[dtype]
        assert (excess <= atol + rtol * np.abs(expected)).all(), f"frame {t}: max |Δ| = {excess.max():.3g}"


@pytest.mark.parametrize("shape", [(2, 8, 3, 4, 5), (6, 8, 4, 5)])
def test_dot_statistics_group_norm_matches_reference(shape):
    """GroupNorm's sums as dots with ones (what Mochi and EasyAnimate trace for TPUs), 5-D and 4-D."""
    rng = np.random.default_rng(4)
    x = rng.normal(1.0, 2.0, shape).astype(np.float32)
    w, b = rng.normal(size=8).astype(np.float32), rng.normal(size=8).astype(np.float32)
    with patches.options.tracing(patches.options.TraceOptions(dot_statistics=True)):
        actual = np.asarray(group_norm.group_norm(jnp.asarray(x), 4, jnp.asarray(w), jnp.asarray(b), 1e-6))
    expected = group_norm.group_norm_reference(x, 4, w, b, 1e-6)
    assert np.abs(actual - expected).max() < 1e-5


def test_mochi_chunked_group_norm_becomes_one_reduction():
    from diffusers.models.autoencoders.autoencoder_kl_mochi import MochiChunkedGroupNorm3D

    layer = MochiChunkedGroupNorm3D(64, chunk_size=2)
    x = torch.randn(1, 64, 5, 4, 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = layer(x)
    assert group_norm.patch(layer) == 2 and type(layer) is group_norm.TorchaxFrameGroupNorm
    assert "stablehlo.while" not in lowered_hlo(layer, tuple(x.shape))
    env = patches.import_torchax().default_env()
    weights = {name: to_jax(p) for name, p in layer.named_parameters()}

    def jax_fn(weights, x):
        weights, x = env.j2t_iso((weights, x))
        with env, torch.no_grad():
            return env.t2j_iso(torch.func.functional_call(layer, weights, (x,)))

    actual = torch.from_numpy(np.array(jax.jit(jax_fn)(weights, to_jax(x))))
    assert_close(actual, expected, 1e-5, "MochiChunkedGroupNorm3D, patched")


def test_stock_group_norm_still_loops():
    stock = lowered_hlo(nn.GroupNorm(2, 8), (1, 8, 3, 4, 4))
    assert "stablehlo.while" in stock, "torchax's GroupNorm no longer loops: re-measure torchax_vae/patches/group_norm.py"
    layer = nn.GroupNorm(2, 8)
    group_norm.patch(layer)
    assert "stablehlo.while" not in lowered_hlo(layer, (1, 8, 3, 4, 4))


# ----- wan_upsample -----


def test_torchax_type_as_still_works_in_place():
    env = patches.import_torchax().default_env()
    a = env.j2t_iso(jnp.ones((2, 2), jnp.float32))
    b = env.j2t_iso(jnp.ones((2, 2), jnp.bfloat16))
    with env:
        assert a.type_as(b) is a, "torchax's type_as returns a new tensor now: torchax_vae/patches/wan_upsample.py may go"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_wan_upsample_equals_upstream(dtype):
    from diffusers.models.autoencoders.autoencoder_kl_wan import WanUpsample

    module = nn.Sequential(WanUpsample(scale_factor=(2.0, 2.0), mode="nearest-exact"))
    x = torch.randn(2, 3, 5, 7).to(dtype)
    expected = module(x)
    assert wan_upsample.patch(module) == 1
    actual = module(x)
    assert actual.dtype == dtype and torch.equal(actual, expected)


# ----- safe_conv3d -----


def test_safe_conv3d_still_chunks():
    # 1x8x2100x256x256 counts as 2.05 "GB" in diffusers' fp16 estimate: two chunks.
    shape = (1, 8, 2100, 256, 256)
    upstream = CogVideoXSafeConv3d(8, 4, kernel_size=3)
    assert lowered_hlo(upstream, shape).count("stablehlo.convolution") == 2, "diffusers stopped chunking"
    safe_conv3d.patch(upstream)
    assert lowered_hlo(upstream, shape).count("stablehlo.convolution") == 1


def test_plain_conv3d_equals_chunked_conv():
    conv = CogVideoXSafeConv3d(2, 3, kernel_size=3)
    x = torch.randn(1, 2, 9, 5, 5)
    expected = conv(x)
    safe_conv3d.patch(conv)
    assert isinstance(conv, safe_conv3d.PlainConv3d)
    assert torch.equal(conv(x), expected)


# ----- frame_conv -----

# (input shape, weight shape, stride, padding, dilation, groups): CogVideoX's causal 3x3x3 and 1x1x1 convs, a
# time kernel of 1 with a spatial one, and the general cases (time padding, strides, dilation, groups, batch 2).
FRAME_CONV_CASES = [
    ((1, 8, 7, 6, 10), (5, 8, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1),
    ((2, 4, 3, 5, 5), (6, 4, 1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
    ((1, 4, 2, 5, 7), (4, 4, 1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1),
    ((2, 6, 9, 8, 8), (4, 3, 3, 3, 2), (2, 2, 1), (1, 0, 2), (2, 1, 2), 2),
    ((1, 4, 3, 6, 6), (4, 4, 3, 3, 3), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),  # one output frame
]


@pytest.mark.parametrize("shape, wshape, stride, padding, dilation, groups", FRAME_CONV_CASES)
def test_conv3d_by_frames_equals_the_3d_convolution(shape, wshape, stride, padding, dilation, groups):
    rng = np.random.default_rng(len(shape) + sum(wshape))
    x, w, b = (jnp.asarray(rng.standard_normal(s), jnp.float32) for s in (shape, wshape, wshape[:1]))
    args = (stride, padding, dilation, groups)
    expected = np.asarray(frame_conv.conv3d_reference(x, w, b, *args))
    actual = np.asarray(jax.jit(lambda x, w, b: frame_conv.conv3d_by_frames(x, w, b, *args))(x, w, b))
    # and both equal PyTorch's F.conv3d
    torch_out = torch.nn.functional.conv3d(*(torch.tensor(np.asarray(a)) for a in (x, w, b)), stride=stride,
                                           padding=padding, dilation=dilation, groups=groups).numpy()
    assert actual.shape == expected.shape == torch_out.shape
    err = max(np.abs(actual - expected).max(), np.abs(actual - torch_out).max())
    scale = np.abs(expected).max()  # float32 sums of up to 216 products: a relative bound
    assert err <= 1e-6 * scale, f"max |Δ| {err:.3g} for outputs up to {scale:.3g}"


@pytest.mark.parametrize("shape, wshape, stride, padding, dilation, groups", FRAME_CONV_CASES)
@pytest.mark.parametrize("frames_per_step", [1, 2])
def test_frame_loop_equals_all_frames_at_once(monkeypatch, shape, wshape, stride, padding, dilation, groups, frames_per_step):
    """Large inputs go through the frame loop; with a tiny STEP_BYTES every case does."""
    frame_bytes = shape[0] * shape[1] * shape[3] * shape[4] * 4
    rng = np.random.default_rng(len(shape) + sum(wshape))
    x, w, b = (jnp.asarray(rng.standard_normal(s), jnp.float32) for s in (shape, wshape, wshape[:1]))
    args = (stride, padding, dilation, groups)
    expected = np.asarray(jax.jit(lambda x, w, b: frame_conv.conv3d_by_frames(x, w, b, *args))(x, w, b))
    monkeypatch.setattr(frame_conv, "STEP_BYTES", frames_per_step * frame_bytes)
    looped = jax.jit(lambda x, w, b: frame_conv.conv3d_by_frames(x, w, b, *args))
    if stride[0] == 1 and expected.shape[2] > frames_per_step:
        assert "while" in looped.lower(x, w, b).as_text(), "the frame loop was not taken"
    actual = np.asarray(looped(x, w, b))
    err = np.abs(actual - expected).max()
    assert actual.shape == expected.shape and err <= 1e-6 * np.abs(expected).max(), f"max |Δ| {err:.3g}"


def test_frame_loop_bounds_xla_temp_memory():
    """A 9x240x360 128-channel causal conv: the loop's temp memory is well under the all-frames lowering's."""
    shapes = [(1, 128, 11, 240, 360), (128, 128, 3, 3, 3), (128,)]
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]

    def temp(step_bytes):
        saved, frame_conv.STEP_BYTES = frame_conv.STEP_BYTES, step_bytes
        try:
            fn = jax.jit(lambda x, w, b: frame_conv.conv3d_by_frames(x, w, b, padding=(0, 1, 1)))
            return fn.lower(*args).compile().memory_analysis().temp_size_in_bytes
        finally:
            frame_conv.STEP_BYTES = saved

    activation = 9 * 240 * 360 * 128 * 4
    all_frames, looped = temp(2**40), temp(activation // 9)
    assert looped <= 0.6 * all_frames, f"loop temp {looped / 1e9:.2f} GB vs all frames {all_frames / 1e9:.2f} GB"


def test_conv3d_by_frames_bf16_accumulates_in_float32():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((1, 16, 5, 6, 6)), jnp.bfloat16)
    w = jnp.asarray(rng.standard_normal((8, 16, 3, 3, 3)) * 0.1, jnp.bfloat16)
    out = frame_conv.conv3d_by_frames(x, w, padding=(0, 1, 1))
    exact = frame_conv.conv3d_reference(x.astype(jnp.float32), w.astype(jnp.float32), padding=(0, 1, 1))
    assert out.dtype == jnp.bfloat16
    err = np.abs(np.asarray(out.astype(jnp.float32) - exact)).max()
    assert err <= 2.0**-8 * np.abs(np.asarray(exact)).max(), f"max |Δ| {err:.3g}"  # one bf16 rounding of the result


def test_conv3d_by_frames_rejects_short_input():
    with pytest.raises(ValueError, match="shorter than the kernel"):
        frame_conv.conv3d_by_frames(jnp.zeros((1, 2, 2, 4, 4)), jnp.zeros((2, 2, 3, 3, 3)))


def test_stock_conv3d_is_one_3d_convolution():
    """torchax lowers F.conv3d to a single 3-D convolution, which XLA:CPU runs slower than 2-D ones."""
    conv = CogVideoXSafeConv3d(4, 4, kernel_size=3, padding=(0, 1, 1))
    hlo = lowered_hlo(conv, (1, 4, 5, 6, 6))
    assert hlo.count("stablehlo.convolution") == 1 and "[b, f, 0, 1, 2]" in hlo, "torchax changed its conv3d lowering"
    safe_conv3d.patch(conv)
    assert frame_conv.patch(conv) == 1 and isinstance(conv, frame_conv.FrameConv3d)
    with patches.options.tracing(patches.options.TraceOptions(cpu_kernels=True)):
        hlo = lowered_hlo(conv, (1, 4, 5, 6, 6))
    assert hlo.count("stablehlo.convolution") == 3 and "[b, f, 0, 1, 2]" not in hlo
    assert lowered_hlo(conv, (1, 4, 5, 6, 6)).count("stablehlo.convolution") == 1  # without cpu_kernels: stock


def test_lowering_uses_frame_convs_only_on_cpu():
    from torchax_vae.engine.lowering import jax_weights
    from torchax_vae.models.cogvideox import LoweredVAE

    vae = random_vae("tiny")
    weights = jax_weights(vae, jnp.float32)
    z = jax.ShapeDtypeStruct((1, 4, 2, 4, 4), jnp.float32)
    for platform, three_d in (("cpu", False), ("tpu", True)):
        lowered = LoweredVAE(vae, platform=platform)
        hlo = jax.jit(lambda w, z: lowered.decode_step(w, z, None)).lower(weights, z).as_text()
        assert ("[b, f, 0, 1, 2]" in hlo) == three_d, platform


# ----- pointwise_conv_cache -----


def test_pointwise_conv_cache_still_copies_input():
    conv = CogVideoXCausalConv3d(4, 8, kernel_size=1)
    x = torch.randn(1, 4, 5, 6, 6)
    output, cache = conv(x)
    assert cache is not None and cache.shape[2] == 5, "diffusers no longer caches the whole input"
    pointwise_conv_cache.patch(conv)
    patched_output, patched_cache = conv(x)
    assert patched_cache is None
    assert torch.equal(patched_output, output)


def test_pointwise_patch_leaves_temporal_convs_alone():
    conv = CogVideoXCausalConv3d(4, 8, kernel_size=3)
    assert pointwise_conv_cache.patch(conv) == 0


# ----- spatial_norm -----


@pytest.mark.parametrize("frames, latent_frames", [(9, 3), (8, 2), (1, 1), (5, 3), (4, 2)])
@pytest.mark.parametrize("size, latent_size", [((8, 12), (2, 3)), ((7, 10), (2, 3))], ids=["whole", "fractional"])
def test_low_res_spatial_norm_equals_upstream(frames, latent_frames, size, latent_size):
    torch.manual_seed(frames + size[0])
    norm = CogVideoXSpatialNorm3D(f_channels=8, zq_channels=4, groups=2)
    for p in norm.parameters():  # non-trivial affine and conv weights
        p.data.normal_()
    f = torch.randn(1, 8, frames, *size)
    zq = torch.randn(1, 4, latent_frames, *latent_size)
    with torch.no_grad():
        expected, _ = norm(f, zq)
        pointwise_conv_cache.patch(norm)
        assert spatial_norm.patch(norm) == 1 and isinstance(norm, spatial_norm.LowResSpatialNorm3D)
        actual, cache = norm(f, zq)
    assert cache == {"conv_y": None, "conv_b": None}
    err = (actual - expected).abs().max().item()
    assert err <= 1e-5, f"max |Δ| {err:.3g}"


def test_spatial_norm_still_convolves_upsampled_latents():
    """Upstream runs conv_y on the upsampled latents: its input has the activation's size, not the latents'."""
    norm = CogVideoXSpatialNorm3D(f_channels=8, zq_channels=4, groups=2)
    seen = []
    norm.conv_y.register_forward_hook(lambda module, args, out: seen.append(tuple(args[0].shape)))
    with torch.no_grad():
        norm(torch.randn(1, 8, 5, 8, 12), torch.randn(1, 4, 3, 2, 3))
    assert seen == [(1, 4, 5, 8, 12)], "diffusers' spatial norm changed; is torchax_vae/patches/spatial_norm.py still needed?"


def test_spatial_norm_patch_needs_pointwise_cacheless_convs():
    norm = CogVideoXSpatialNorm3D(f_channels=8, zq_channels=4, groups=2)
    assert spatial_norm.patch(norm) == 0  # conv_y still carries upstream's cache
    pointwise_conv_cache.patch(norm)
    assert spatial_norm.patch(norm) == 1


# ----- time_pool -----


def test_downsample_still_merges_width_into_batch_for_time_pooling():
    shape = (1, 4, 5, 8, 8)
    upstream = CogVideoXDownsample3D(4, 4, compress_time=True)
    transposes = lowered_hlo(upstream, shape).count("stablehlo.transpose")
    assert time_pool.patch(upstream) == 1
    patched = lowered_hlo(upstream, shape).count("stablehlo.transpose")
    assert transposes >= patched + 2, f"diffusers no longer permutes NCTHW for avg_pool1d ({transposes} vs {patched})"


@pytest.mark.parametrize("frames", [1, 2, 5, 8, 9])
@pytest.mark.parametrize("compress_time", [True, False])
def test_time_pool_equals_upstream(frames, compress_time):
    layer = CogVideoXDownsample3D(4, 6, compress_time=compress_time)
    x = torch.randn(2, 4, frames, 7, 10)
    expected = layer(x)
    time_pool.patch(layer)
    assert isinstance(layer, time_pool.TimePooledDownsample3D)
    actual = layer(x)
    assert actual.shape == expected.shape
    assert torch.allclose(actual, expected, atol=1e-6, rtol=0), (actual - expected).abs().max().item()


# ----- tile_mask -----


def test_extent_at_follows_up_and_down_sampling():
    assert tiling.extent_at(3, 4, 32) == 24  # decoder: x8
    assert tiling.extent_at(21, 32, 16) == 10  # encoder: halves, rounding down
    assert tiling.extent_at(21, 32, 4) == 2  # 21 -> 10 -> 5 -> 2
    assert tiling.extent_at(7, 7, 7) == 7
    with pytest.raises(ValueError, match="not a multiple"):
        tiling.extent_at(3, 4, 30)
    with pytest.raises(ValueError, match="halved"):
        tiling.extent_at(3, 32, 12)


@pytest.fixture(scope="module")
def lowered_tiny():
    from torchax_vae.engine.lowering import jax_weights
    from torchax_vae.models.cogvideox import LoweredVAE

    vae = random_vae("tiny", seed=5)
    return vae, LoweredVAE(vae), jax_weights(vae, jnp.float32)


@pytest.mark.parametrize("valid", [(24, 16), (21, 11), (32, 32)], ids=["even", "odd", "full"])
def test_masked_tile_equals_smaller_tile_encoder(lowered_tiny, valid):
    vae, lowered, weights = lowered_tiny
    x = torch.randn(1, 3, 9, *valid, generator=torch.Generator().manual_seed(0))
    expected, _ = vae.encoder(x)
    padded = torch.nn.functional.pad(x, (0, 32 - valid[1], 0, 32 - valid[0]), value=5.0)  # garbage, not zeros
    out, _ = jax.jit(lowered.encode_step)(weights, to_jax(padded), None, jnp.asarray(valid, jnp.int32))
    h, w = expected.shape[3:]
    assert_close(torch.tensor(np.asarray(out)[..., :h, :w]), expected, TOLERANCE[torch.float32], f"encoder {valid}")


@pytest.mark.parametrize("valid", [(3, 2), pytest.param((1, 3), marks=pytest.mark.slow), pytest.param((4, 4), marks=pytest.mark.slow)],
                         ids=["edge", "thin", "full"])
def test_masked_tile_equals_smaller_tile_decoder(lowered_tiny, valid):
    vae, lowered, weights = lowered_tiny
    z = torch.randn(1, 4, 3, *valid, generator=torch.Generator().manual_seed(1))
    expected, expected_cache = vae.decoder(z)
    padded = torch.nn.functional.pad(z, (0, 4 - valid[1], 0, 4 - valid[0]), value=-3.0)
    step = jax.jit(lowered.decode_step)
    out, cache = step(weights, to_jax(padded), None, jnp.asarray(valid, jnp.int32))
    h, w = expected.shape[3:]
    assert_close(torch.tensor(np.asarray(out)[..., :h, :w]), expected, TOLERANCE[torch.float32], f"decoder {valid}")
    # The carried conv_cache keeps it exact in the next frame batch too.
    z2 = torch.randn(1, 4, 2, *valid, generator=torch.Generator().manual_seed(2))
    expected2, _ = vae.decoder(z2, conv_cache=expected_cache)
    padded2 = torch.nn.functional.pad(z2, (0, 4 - valid[1], 0, 4 - valid[0]), value=-3.0)
    out2, _ = step(weights, to_jax(padded2), cache, jnp.asarray(valid, jnp.int32))
    assert_close(torch.tensor(np.asarray(out2)[..., :h, :w]), expected2, TOLERANCE[torch.float32],
                 f"decoder {valid}, second batch")


def test_masked_layers_are_unchanged_outside_a_tile():
    conv = CogVideoXCausalConv3d(2, 3, kernel_size=3)
    x = torch.randn(1, 2, 5, 6, 6)
    expected, _ = conv(x)
    safe_conv3d.patch(conv)
    assert tile_mask.patch(conv) == 1
    assert isinstance(conv.conv, tile_mask.TileMaskedConv3d)
    assert torch.equal(conv(x)[0], expected)


# ----- apply -----


def test_apply_counts_and_leaves_users_model_alone():
    vae = random_vae("tiny")
    classes_before = [type(m) for m in vae.modules()]
    from torchax_vae.models.cogvideox import MARKED
    from torchax_vae.models.wan import WanVAE

    counts = patches.apply(vae, MARKED)
    assert set(counts) == {
        "group_norm", "safe_conv3d", "frame_conv", "pointwise_conv_cache", "spatial_norm", "time_pool", "tile_mask",
        "sharding_marks", "wan_upsample", "ltx_noise", "zero_history", "causal_mask", "halo_conv",
    }
    # Wan's, LTX-Video's, Wan's and Qwen-Image's, HunyuanVideo 1.5's
    others = ("wan_upsample", "ltx_noise", "zero_history", "causal_mask", "halo_conv")
    assert all(counts[name] > 0 for name in counts if name not in others), counts
    assert all(counts[name] == 0 for name in others), counts
    wan_counts = patches.apply(random_vae("wan-tiny"), WanVAE.family.marked)  # the same patches, by class: a Wan model gets its own
    assert {name for name, n in wan_counts.items() if n} == {"frame_conv", "sharding_marks", "wan_upsample", "zero_history"}, (
        wan_counts)
    from torchax_vae.models.ltx import LTXVideoVAE

    ltx_counts = patches.apply(random_vae("ltx091-tiny"), LTXVideoVAE.family.marked)  # 0.9.1: 5 noise-injecting resnets
    assert {name for name, n in ltx_counts.items() if n} == {"frame_conv", "sharding_marks", "ltx_noise"}, ltx_counts
    if "ltx2ts-tiny" in MODELS:  # LTX-2's own resnet class (diffusers >= 0.37) gets the noise feed too
        from torchax_vae.models.ltx2 import LTX2VideoVAE

        ltx2_counts = patches.apply(random_vae("ltx2ts-tiny"), LTX2VideoVAE.family.marked)
        assert {name for name, n in ltx2_counts.items() if n} == {"frame_conv", "sharding_marks", "ltx_noise"}, (
            ltx2_counts)
    # apply() patches what it is given; TorchaxVAE gives it a private copy:
    from torchax_vae import TorchaxVAE

    user_vae = random_vae("tiny")
    TorchaxVAE(user_vae)
    assert [type(m) for m in user_vae.modules()] == classes_before


# ----- nearest_upsample -----

def _upsample_in_torchax(fn, x):
    """fn(x) traced through torchax's default environment (with the package's patches applied), as JAX."""
    env = patches.import_torchax().default_env()
    patches.nearest_upsample.patch()
    with env:
        return np.asarray(env.t2j_iso(fn(env.j2t_iso(jnp.asarray(x.numpy())))))


@pytest.mark.parametrize("shape, kwargs", [
    ((1, 3, 4, 5), {"scale_factor": 2.0}),
    ((2, 3, 4, 5), {"scale_factor": (2.0, 3.0), "mode": "nearest-exact"}),
    ((1, 2, 3, 4, 5), {"scale_factor": (1.0, 2.0, 2.0)}),
    ((1, 2, 3, 4, 5), {"size": (6, 8, 10), "mode": "nearest-exact"}),
    ((1, 2, 7), {"scale_factor": 2.0}),
])
def test_nearest_upsample_equals_torch(shape, kwargs):
    """Whole factors (CogVideoX, HunyuanVideo, Wan upsamplers): the repeat equals torch's nearest/nearest-exact."""
    x = torch.randn(shape)
    got = _upsample_in_torchax(lambda t: nn.functional.interpolate(t, **kwargs), x)
    want = nn.functional.interpolate(x, **kwargs).numpy()
    assert got.shape == want.shape and np.array_equal(got, want), f"max |Δ| {np.abs(got - want).max()}"


@pytest.mark.parametrize("kwargs", [{"scale_factor": 1.5}, {"size": (7, 9)}, {"scale_factor": 1.5, "mode": "nearest-exact"}])
def test_nearest_upsample_fractional_factors_keep_torchaxs_decomposition(kwargs):
    x = torch.randn(1, 2, 4, 6)
    got = _upsample_in_torchax(lambda t: nn.functional.interpolate(t, **kwargs), x)
    want = nn.functional.interpolate(x, **kwargs).numpy()
    assert np.array_equal(got, want), f"max |Δ| {np.abs(got - want).max()}"


def test_nearest_upsample_is_still_a_gather_upstream():
    """torchax decomposes nearest upsampling to a gather, which XLA all-gathers on a mesh: the patch is needed."""
    env = patches.import_torchax().default_env()
    op = torch.ops.aten.upsample_nearest2d.vec
    assert op in env._decomps
    stock = env._ops[op].func.torchax_vae_stock if op in env._ops else env._decomps[op].func

    def f(a):
        with env:
            return env.t2j_iso(stock(env.j2t_iso(a), None, [2.0, 2.0]))

    text = jax.jit(f).lower(jnp.zeros((1, 2, 4, 4))).as_text()
    assert "gather" in text



# ----- keyword_linear -----


def test_keyword_linear():
    """F.linear by torch's keywords (MiniMax H3's audio VAE) equals torch's; torchax's own lowering still refuses
    them, so the patch is needed."""
    from torchax_vae.patches import keyword_linear

    keyword_linear.patch()
    env = patches.import_torchax().default_env()
    stock = env._ops[nn.functional.linear].func.torchax_vae_stock
    x, w, b = torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5)
    with env:
        got = env.t2j_iso(nn.functional.linear(input=env.j2t_iso(jnp.asarray(x.numpy())),
                                               weight=env.j2t_iso(jnp.asarray(w.numpy())),
                                               bias=env.j2t_iso(jnp.asarray(b.numpy()))))
    want = nn.functional.linear(x, w, b).numpy()
    assert np.abs(np.asarray(got) - want).max() < 1e-6
    with pytest.raises(TypeError, match="input"):
        stock(input=jnp.asarray(x.numpy()), weight=jnp.asarray(w.numpy()))


def test_hann_window():
    """torch.hann_window inside a trace (Cosmos 3's STFT window) equals torch's, periodic or not, in float32 and
    bf16; a torchax environment without the patch still has no lowering for it, so the patch is needed."""
    import jax

    from torchax_vae.patches import hann_window

    hann_window.patch()
    torchax = patches.import_torchax()
    env = torchax.default_env()
    for length in (1, 2, 5, 16):
        for periodic in (True, False):
            for dtype in (torch.float32, torch.bfloat16):
                with env:
                    got = jax.jit(lambda: env.t2j_iso(torch.hann_window(length, periodic, dtype=dtype)))()
                # in bf16, the float32 window rounded (torch's own bf16 window computes in bf16: 2 steps off)
                want = torch.hann_window(length, periodic).to(dtype)
                assert str(got.dtype) == str(dtype).removeprefix("torch."), (got.dtype, dtype)
                tolerance = 1e-6
                delta = np.abs(np.asarray(got, np.float32) - want.float().numpy()).max()
                assert delta <= tolerance, (length, periodic, dtype, delta)
    bare = torchax.tensor.Environment()
    with bare, pytest.raises(torchax.tensor.OperatorNotFound, match="hann_window"):
        torch.hann_window(8, device="jax")


def test_weight_norm():
    """Weight-normalized layers inside a trace (the sound VAEs' convolutions) get torch's weights: in bf16 bit for
    bit as ATen's fused float32 kernel rounds them, in float32 within 1e-6, both forms (nn.utils.weight_norm's hook
    and the parametrization), over dim 0 and the last; a torchax environment without the patch computes the
    composite form in bf16 and is steps off, so the patch is needed."""
    import jax

    from torchax_vae.patches import weight_norm

    weight_norm.patch()
    torchax = patches.import_torchax()
    env = torchax.default_env()
    torch.manual_seed(0)
    v, g0, g_last = torch.randn(16, 12, 7) * 0.3, torch.rand(16, 1, 1) + 0.5, torch.rand(1, 1, 7) + 0.5
    off = []
    for dtype in (torch.float32, torch.bfloat16):
        for dim, g in ((0, g0), (2, g_last)):
            want = torch._weight_norm(v.to(dtype), g.to(dtype), dim)
            jv, jg = (jax.numpy.asarray(t.float().numpy()).astype(str(dtype).removeprefix("torch.")) for t in (v, g))
            with env:
                got = jax.jit(lambda a, b: env.t2j_iso(torch._weight_norm(env.j2t_iso(a), env.j2t_iso(b), dim)))(jv, jg)
            got = torch.tensor(np.asarray(got, np.float32))
            delta = (got - want.float()).abs().max().item()
            assert delta <= (1e-6 if dtype == torch.float32 else 0), (dtype, dim, delta)
            with torchax.tensor.Environment():  # the composite form, unpatched
                bare = torch._weight_norm(v.to(dtype).to("jax"), g.to(dtype).to("jax"), dim)
            off.append((torch.tensor(np.asarray(bare._elem, np.float32)) - want.float()).abs().max().item())
    assert max(off[2:]) > 0, f"torchax's own bf16 weight norm equals torch's: {off} (the patch may go)"
    for wrap in (nn.utils.weight_norm, nn.utils.parametrizations.weight_norm):
        conv = wrap(nn.Conv1d(12, 16, 7)).to(torch.bfloat16)
        with torch.no_grad():
            conv(torch.zeros(1, 12, 7, dtype=torch.bfloat16))  # (the hook's form computes the weight in forward)
            want = conv.weight.float().clone()
            with env:
                conv.to("jax")
                conv(torch.zeros(1, 12, 7, dtype=torch.bfloat16, device="jax"))
                got = torch.tensor(np.asarray(conv.weight._elem, np.float32))
        assert torch.equal(got, want), (wrap.__module__, (got - want).abs().max().item())


# ----- antialias_resize -----


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_antialias_resize_equals_torch(mode):
    """F.interpolate(antialias=True) inside a trace (DINOv2's position embeddings: AutoencoderRAE's encoder) equals
    torch's kernel: down and up, by size and by scale factors (which set the scale themselves), align_corners both
    ways, in float32 within 1e-5 and in bf16 within one bf16 step of the float32 result; an environment without the
    patch still fails with scale factors (torchax 0.0.13 and the 0.0.14 nightlies), so the patch is needed."""
    import jax

    from torchax_vae.patches import antialias_resize

    antialias_resize.patch()
    torchax = patches.import_torchax()
    env = torchax.default_env()
    x = torch.randn(2, 3, 37, 23, generator=torch.Generator().manual_seed(0))
    for kwargs in ({"size": (16, 16)}, {"size": (64, 50)}, {"size": (37, 9)}, {"scale_factor": (0.5, 0.75)},
                   {"scale_factor": 1.7}, {"size": (5, 70), "align_corners": True}):
        kwargs = {"mode": mode, "antialias": True, "align_corners": False, **kwargs}
        want = nn.functional.interpolate(x, **kwargs)
        for dtype, tolerance in ((torch.float32, 1e-5), (torch.bfloat16, 2 ** -7 * float(want.abs().max()))):
            with env:
                got = jax.jit(lambda a: env.t2j_iso(nn.functional.interpolate(env.j2t_iso(a), **kwargs)))(
                    jnp.asarray(x.float().numpy()).astype(dtype.__str__().removeprefix("torch.")))
            assert got.shape == tuple(want.shape) and str(got.dtype) == str(dtype).removeprefix("torch."), kwargs
            delta = np.abs(np.asarray(got, np.float32) - want.numpy()).max()
            assert delta <= tolerance, f"{kwargs} {dtype}: max |Δ| {delta:.2e} > {tolerance:.1e}"
    bare = torchax.tensor.Environment()  # 0.0.14's nightlies lower the output-size form; scale factors fail in both
    with bare, pytest.raises(TypeError):
        nn.functional.interpolate(x.to("jax"), scale_factor=(0.5, 0.75), mode=mode, antialias=True)


# ----- attention_split -----


def _sdpa_lowered_for(mesh, q_shape, mask=None) -> str:
    """The StableHLO of F.scaled_dot_product_attention on [B, heads, tokens, dim] zeros, traced for `mesh`."""
    from torchax_vae.patches.options import TraceOptions, tracing

    env = patches.import_torchax().default_env()
    patches.attention_split.patch()

    def f(q):
        with env, tracing(TraceOptions(mesh=mesh)):
            t = env.j2t_iso(q)
            m = None if mask is None else env.j2t_iso(jnp.asarray(mask.numpy()))
            return env.t2j_iso(nn.functional.scaled_dot_product_attention(t, t, t, attn_mask=m))

    return jax.jit(f).lower(jax.ShapeDtypeStruct(q_shape, jnp.float32)).as_text()


def test_attention_split_gives_each_device_its_share_of_the_queries():
    """On a mesh of 8 (abstract v6e chips), the queries' token axis is split 8 ways, padded to a multiple of 8."""
    from torchax_vae import make_mesh
    from torchax_vae.plan.targets import target

    mesh = make_mesh(target("v6e-8").devices())
    even = _sdpa_lowered_for(mesh, (1, 1, 1024, 8))
    assert "tensor<1x1x1024x8xf32>" in even and even.count("sharding_constraint") >= 4
    uneven = _sdpa_lowered_for(mesh, (1, 1, 780, 8))  # 780 tokens: 784 = 8 x 98 rows, the last 4 dropped
    assert "tensor<1x1x784x8xf32>" in uneven and "tensor<1x1x780x8xf32>" in uneven
    small = _sdpa_lowered_for(mesh, (1, 1, 4, 8))  # fewer queries than devices: nothing split
    assert "sharding_constraint" not in small
    assert "sharding_constraint" not in _sdpa_lowered_for(None, (1, 1, 1024, 8))  # no mesh: torchax's lowering


def test_attention_split_on_a_mesh_keeps_one_devices_query_blocks_and_splits_each(monkeypatch):
    """Long attention on a mesh: the same query blocks as on one device (a `while`), each block's rows split over the
    8 devices (so each holds 1/8 of a block's scores, where before the split attention held its whole share), and
    the values of the whole attention. 1024 queries, a limit of 128 queries' scores: 8 blocks of 128 rows."""
    from torchax_vae import make_mesh
    from torchax_vae.patches.options import TraceOptions, tracing
    from torchax_vae.plan.targets import target

    env = patches.import_torchax().default_env()
    patches.attention_split.patch()
    limit = 128 * 1024 * 4

    def lowered(mesh, limit):
        def f(q):
            with env, tracing(TraceOptions(mesh=mesh, attention_score_limit=limit)):
                t = env.j2t_iso(q)
                return env.t2j_iso(nn.functional.scaled_dot_product_attention(t, t, t))
        return jax.jit(f).lower(jax.ShapeDtypeStruct((1, 1, 1024, 8), jnp.float32)).as_text()

    mesh = make_mesh(target("v6e-8").devices())
    blocked = lowered(mesh, limit)
    assert "stablehlo.while" in blocked and "tensor<1x1x128x1024xf32>" in blocked, "one device's blocks of 128 rows"
    assert blocked.count("sharding_constraint") >= 4
    assert "stablehlo.while" not in lowered(mesh, None)  # under the limit: the split alone, as before

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 300, 8, generator=gen) for _ in range(3))
    want = nn.functional.scaled_dot_product_attention(q, k, v)

    def run(a, b, c):  # one CPU device here: the blocks (3 of 128 rows, padded) with the split's constraints
        with env, tracing(TraceOptions(mesh=make_mesh(), attention_score_limit=128 * 300 * 2 * 4)):
            return env.t2j_iso(nn.functional.scaled_dot_product_attention(env.j2t_iso(a), env.j2t_iso(b), env.j2t_iso(c)))

    got = np.asarray(jax.jit(run)(*(jnp.asarray(t.numpy()) for t in (q, k, v))))
    assert np.abs(got - want.numpy()).max() < 1e-5, f"max |Δ| {np.abs(got - want.numpy()).max()}"


def test_attention_split_pads_a_mask_with_rows_that_mask_nothing():
    from torchax_vae.patches.attention_split import _padded_mask

    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    args, kwargs = _padded_mask((), {"attn_mask": causal}, 6, 8)
    assert kwargs["attn_mask"].shape == (8, 6) and kwargs["attn_mask"][6:].all() and torch.equal(kwargs["attn_mask"][:6], causal)
    additive = torch.zeros(1, 6, 6).masked_fill(~causal, float("-inf"))
    (padded, *_), _ = _padded_mask((additive,), {}, 6, 8)
    assert padded.shape == (1, 8, 6) and (padded[:, 6:] == 0).all()
    row = torch.zeros(1, 1, 6)  # one row for every query: nothing to pad
    assert _padded_mask((row,), {}, 6, 8)[0][0] is row


def test_attention_split_in_torchax_equals_torch_with_a_causal_mask(monkeypatch):
    """The padded lowering computes what torch does: 70 queries padded to 72 (one device here, so the padding is
    forced; the 8-device worker checks whole decodes against PyTorch)."""
    from jax.sharding import PartitionSpec

    from torchax_vae import make_mesh
    from torchax_vae.patches import attention_split
    from torchax_vae.patches.options import TraceOptions, tracing

    monkeypatch.setattr(attention_split, "query_split", lambda mesh, shape: (PartitionSpec(None, None, None, None), 72))

    env = patches.import_torchax().default_env()
    patches.attention_split.patch()
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 70, 8, generator=gen) for _ in range(3))
    mask = torch.ones(70, 70, dtype=torch.bool).tril()
    want = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def f(a, b, c):
        with env, tracing(TraceOptions(mesh=make_mesh())):
            out = nn.functional.scaled_dot_product_attention(
                env.j2t_iso(a), env.j2t_iso(b), env.j2t_iso(c), attn_mask=env.j2t_iso(jnp.asarray(mask.numpy())))
            return env.t2j_iso(out)

    got = np.asarray(jax.jit(f)(*(jnp.asarray(t.numpy()) for t in (q, k, v))))
    assert np.abs(got - want.numpy()).max() < 1e-5, f"max |Δ| {np.abs(got - want.numpy()).max()}"


# ----- zero_history -----


@pytest.mark.parametrize("frames, cache", [(1, 0), (1, 1), (1, 2), (3, 0), (2, 2)])
def test_zero_history_equals_diffusers_causal_conv(frames, cache):
    """One output frame over zero padding (1 frame, no cache; 1 frame after 1 cached) drops the zero taps; the
    rest (a full cache, several output frames) is diffusers' forward. Same numbers either way."""
    import copy

    from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d

    from torchax_vae.patches import zero_history

    torch.manual_seed(0)
    conv = WanCausalConv3d(4, 6, 3, padding=1)
    ours = copy.deepcopy(conv)
    assert zero_history.patch(nn.Sequential(ours)) == 1 and zero_history.patch(nn.Sequential(ours)) == 0
    x = torch.randn(1, 4, frames, 5, 7)
    cache_x = torch.randn(1, 4, cache, 5, 7) if cache else None
    want = conv(x, cache_x)
    got = ours(x, cache_x)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-6), f"max |Δ| {(got - want).abs().max()}"


@pytest.mark.parametrize("frames, cache", [(1, 0), (3, 0), (2, 2), (4, 1)])
def test_gpu_traces_pad_wan_convolutions_inside(monkeypatch, frames, cache):
    """On GPUs (TraceOptions.halo_conv) Wan's causal convolution pads height and width inside the convolution,
    where torchax_vae/patches/halo_conv.py can split it, not with F.pad before it: the same numbers as diffusers'."""
    import copy

    from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d

    from torchax_vae.patches import zero_history

    torch.manual_seed(0)
    conv = WanCausalConv3d(4, 6, 3, padding=1)
    ours = copy.deepcopy(conv)
    zero_history.patch(nn.Sequential(ours))
    x = torch.randn(1, 4, frames, 5, 7)
    cache_x = torch.randn(1, 4, cache, 5, 7) if cache else None
    want = conv(x, cache_x)
    pads = []
    monkeypatch.setattr(nn.functional, "pad", lambda t, p, *a, **k: pads.append(tuple(p)) or torch.constant_pad_nd(t, p))
    with patches.options.tracing(patches.options.TraceOptions(halo_conv=True)):
        got = ours(x, cache_x)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-6), f"max |Δ| {(got - want).abs().max()}"
    assert all(p[:4] == (0, 0, 0, 0) for p in pads), pads  # time alone, if anything


@needs("qwenimage21-tiny")  # a version gate (scripts/vaes.py): on a diffusers that has it, it imports
def test_gpu_traces_pad_qwenimage21_convolutions_inside():
    import diffusers.models.autoencoders.autoencoder_kl_qwenimage21 as qwenimage21
    QwenImage21CausalConv3d = qwenimage21.QwenImage21CausalConv3d

    from torchax_vae.patches import zero_history

    torch.manual_seed(0)
    conv = QwenImage21CausalConv3d(4, 6, 3, padding=1)
    x = torch.randn(1, 4, 1, 5, 7)
    want = conv(x)
    assert zero_history.patch(nn.Sequential(conv)) == 1
    with patches.options.tracing(patches.options.TraceOptions(halo_conv=True)):
        got = conv(x)
    assert torch.allclose(got, want, atol=1e-6), f"max |Δ| {(got - want).abs().max()}"


def test_zero_history_convolves_one_frame_in_2d(monkeypatch):
    from diffusers.models.autoencoders.autoencoder_kl_qwenimage import QwenImageCausalConv3d

    from torchax_vae.patches import zero_history

    conv = QwenImageCausalConv3d(4, 6, 3, padding=1)
    zero_history.patch(nn.Sequential(conv))

    def no_3d(*args, **kwargs):
        raise AssertionError("a 3-D convolution over zero frames")

    monkeypatch.setattr(nn.functional, "conv3d", no_3d)
    assert conv(torch.randn(1, 4, 1, 5, 7)).shape == (1, 6, 1, 5, 7)


# ----- causal_mask -----


@pytest.mark.parametrize("n_frame, n_hw", [(1, 4), (3, 6), (5, 2)])
def test_causal_mask_equals_diffusers_loop(n_frame, n_hw):
    from diffusers.models.autoencoders.autoencoder_kl_hunyuanvideo15 import HunyuanVideo15AttnBlock

    from torchax_vae.patches import causal_mask

    expected = HunyuanVideo15AttnBlock.prepare_causal_attention_mask(n_frame, n_hw, torch.float32, "cpu")
    for batch_size in (None, 2):  # one [tokens, tokens] mask, broadcast over the batch
        actual = causal_mask.causal_attention_mask(n_frame, n_hw, torch.float32, "cpu", batch_size=batch_size)
        assert actual.dtype == expected.dtype and torch.equal(actual, expected), (n_frame, n_hw, batch_size)
    block = HunyuanVideo15AttnBlock(8)
    assert causal_mask.patch(nn.Sequential(block)) == 1 and causal_mask.patch(nn.Sequential(block)) == 0
    assert block.prepare_causal_attention_mask is causal_mask.causal_attention_mask


@pytest.mark.parametrize("frames", [1, 2, 3, 9])
def test_replicate_conv_takes_causal_time_padding_without_a_padded_copy(frames):
    """HunyuanVideo's causal convolution on GPUs (torchax_vae/patches/halo_conv.py `replicate_conv`): its (2, 0) replicate time
    padding as two convolutions (the first two output frames, then the rest), equal to padding first, and with
    no array p frames longer than the input in the program (XLA:GPU's heap left holes between the two sizes)."""
    import jax
    import jax.numpy as jnp

    from torchax_vae.patches import halo_conv

    x = jax.random.normal(jax.random.key(0), (1, 4, frames, 6, 5))
    w, b = jax.random.normal(jax.random.key(1), (3, 4, 3, 3, 3)), jnp.arange(3.0)
    padding = ((2, 0), (1, 1), (1, 1))

    def ours(x):
        return halo_conv.replicate_conv(x, w, b, (1, 1, 1), padding, (1, 1, 1), 1)

    with patches.options.tracing(patches.options.TraceOptions.for_platform("cuda")):
        got = ours(x)
        text = jax.jit(ours).lower(x).as_text()
    padded = jnp.pad(x, [(0, 0), (0, 0), *padding], mode="edge")
    expected = jax.lax.conv_general_dilated(padded, w, (1, 1, 1), "VALID") + b[None, :, None, None, None]
    error = float(jnp.abs(got - expected).max())
    assert got.shape == expected.shape and error <= 1e-5, f"max |Δ| = {error:.3g}"
    if frames > 2:
        assert f"tensor<1x4x{frames + 2}x6x5x" not in text, "a time-padded copy of the input"


# ----- attention_blocks -----


def test_attention_blocks_equal_the_whole_attention_and_bound_the_scores():
    """Query blocks under lax.map give the stock attention's result; the compiled program holds one block's scores,
    not all of them (XLA's temp bytes); a ragged last block pads and drops its extra rows."""
    from torchax_vae.patches.attention_blocks import blocked_attention, block_rows

    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.standard_normal((1, 1, 1000, 64)), jnp.float32) for _ in range(3))
    whole = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / 8.0, axis=-1) @ v
    rows = block_rows(q.shape, 1000, 4, 1000 * 100 * 4)  # 100 queries' scores per block
    assert rows == 100 and block_rows(q.shape, 1000, 4, None) is None and block_rows(q.shape, 1000, 4, 1 << 30) is None
    for rows in (100, 300):  # 300: four blocks, the last padded with 200 zero queries
        got = blocked_attention(q, k, v, scale=1 / 8.0, rows=rows)
        assert float(jnp.abs(got - whole).max()) <= 1e-5
    whole_temp = jax.jit(lambda q, k, v: jax.nn.softmax(q @ k.transpose(0, 1, 3, 2), axis=-1) @ v).lower(
        q, k, v).compile().memory_analysis().temp_size_in_bytes
    blocked_temp = blocked_attention.lower(q, k, v, scale=0.125, rows=100).compile().memory_analysis().temp_size_in_bytes
    assert blocked_temp < whole_temp / 3, (blocked_temp, whole_temp)


def test_attention_blocks_in_an_autoencoder_kl_decode(monkeypatch):
    """With the backend's score limit below its mid-block attention, AutoencoderKL's decode runs it in blocks (a
    `while` in the program) and still equals PyTorch within fp32 tolerance; masked attention keeps the stock one."""
    import dataclasses

    from helpers import randn, random_vae

    from torchax_vae import TorchaxVAE
    from torchax_vae.placement import backends

    row = dataclasses.replace(backends.BACKENDS["cpu"], attention_score_limit=32 * 1024)  # 8 of its 256 queries' scores
    monkeypatch.setitem(backends.BACKENDS, "cpu", row)
    vae = random_vae("kl-tiny")
    ours = TorchaxVAE(vae)
    z = randn(1, 4, 16, 16, seed=1)  # a 16 x 16 latent: 256 tokens in the mid block
    delta = (ours.decode(z).sample - vae.decode(z).sample).abs().max().item()
    assert delta <= 1e-4, f"blocked attention decode: max |Δ| {delta:.3g}"
    assert "stablehlo.while" in "".join(ours.lower("decode", (1, 4, 16, 16)).values())
    monkeypatch.setitem(backends.BACKENDS, "cpu", dataclasses.replace(row, attention_score_limit=None))
    assert "stablehlo.while" not in "".join(TorchaxVAE(vae).lower("decode", (1, 4, 16, 16)).values())

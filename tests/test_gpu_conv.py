"""torchax_vae/patches/gpu_conv.py: the GPU convolution rule, against torchax's own lowering, and at every released size for CUDA.

Runs on CPU: the rule's pieces are computed here and compared with the plain
convolution; the released sizes are traced and lowered for "cuda" without a GPU
(`TorchaxVAE.lower`), and their StableHLO is checked for what the rule guarantees.
"""

import dataclasses
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from torchax_vae.placement import backends
from torchax_vae import TorchaxVAE, patches
from torchax_vae.models import input_shape
from torchax_vae.models.windows import WindowVAE
from torchax_vae.patches import gpu_conv
from helpers import MODELS, TOLERANCE, assert_close, random_vae
from vaes import meta_vae

# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((1, 4, 9, 6, 7), (5, 4, 3, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1),  # a causal 3x3x3 conv (time padded outside)
    ((1, 4, 9, 6, 7), (6, 2, 3, 3, 1), (2, 1, 2), (1, 0, 1), (2, 1, 1), 2),  # stride, time padding, dilation, groups
    ((5, 4, 6, 7), (3, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # a 2-D conv with frames folded into the batch
    ((2, 4, 5, 6, 6), (3, 4, 1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), 1),  # batch, then time pieces
]


def _conv(shapes, seed=0, dtype=jnp.float32):
    (xs, ws, *_), rng = shapes, np.random.default_rng(seed)
    x = jnp.asarray(rng.standard_normal(xs), dtype)
    w = jnp.asarray(rng.standard_normal(ws) * 0.2, dtype)
    b = jnp.asarray(rng.standard_normal(ws[0]), dtype)
    return x, w, b


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("limit", [1, 700, 2000, 10**9])
def test_bounded_equals_stock(case, limit):
    """Any split the bound forces (down to one frame of one batch element) gives the plain convolution."""
    x, w, b = _conv(case)
    stride, padding, dilation, groups = case[2:]
    expected = gpu_conv.stock(x, w, b, stride, padding, dilation, groups)
    actual = gpu_conv.bounded(x, w, b, stride, padding, dilation, groups, limit=limit)
    assert actual.shape == expected.shape
    err = float(jnp.abs(actual - expected).max())
    assert err <= 1e-5, f"max |Δ| {err:.3g} at limit {limit}"


def test_bounded_keeps_every_piece_under_the_limit():
    x, w, b = _conv(CASES[0])
    limit = 4 * 4 * 3 * 6 * 7 + 1  # 3 input frames (one output frame and the kernel's overlap)
    hlo = jax.jit(lambda x, w, b: gpu_conv.bounded(x, w, b, (1, 1, 1), (0, 1, 1), (1, 1, 1), 1, limit)).lower(x, w, b)
    sizes = _conv_operand_bytes(hlo.as_text())
    assert len(sizes) == 7 and max(sizes) < limit, sizes  # 7 output frames, one piece each


@pytest.mark.parametrize("shape", [(1, 6, 4, 5, 3), (3, 6, 5, 7)])
def test_pointwise_is_a_matmul_equal_to_the_convolution(shape):
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal(shape), jnp.float32)
    w = jnp.asarray(rng.standard_normal((4, 6) + (1,) * (len(shape) - 2)), jnp.float32)
    b = jnp.asarray(rng.standard_normal(4), jnp.float32)
    ones = (1,) * (len(shape) - 2)
    expected = gpu_conv.stock(x, w, b, ones, (0,) * len(ones), ones, 1)
    hlo = jax.jit(lambda x, w, b: gpu_conv.gpu_conv(x, w, b, ones, (0,) * len(ones), ones, 1)).lower(x, w, b).as_text()
    assert "stablehlo.convolution" not in hlo and "stablehlo.dot_general" in hlo
    err = float(jnp.abs(gpu_conv.pointwise(x, w, b) - expected).max())
    assert err <= 1e-5, f"max |Δ| {err:.3g}"


def test_stock_lowering_is_one_convolution():
    """torchax still hands every convolution, pointwise or huge, to one conv_general_dilated (why the rule exists)."""
    conv = torch.nn.Conv3d(4, 3, kernel_size=1)
    env = patches.import_torchax().default_env()
    patches.gpu_conv.patch()
    x = jax.ShapeDtypeStruct((1, 4, 2, 3, 3), jnp.float32)
    weights = {k: jax.ShapeDtypeStruct(tuple(v.shape), jnp.float32) for k, v in conv.state_dict().items()}

    def f(weights, x):
        weights, x = env.j2t_iso((weights, x))
        with env, torch.no_grad():
            return env.t2j_iso(torch.func.functional_call(conv, weights, (x,)))

    assert jax.jit(f).lower(weights, x).as_text().count("stablehlo.convolution") == 1
    with patches.options.tracing(patches.options.TraceOptions(gpu_conv_limit=2**31)):
        hlo = jax.jit(lambda *a: f(*a)).lower(weights, x).as_text()  # a new function: jit caches f's first trace
    assert "stablehlo.convolution" not in hlo and "stablehlo.dot_general" in hlo


def test_patch_env_is_idempotent():
    env = patches.import_torchax().default_env()
    gpu_conv.patch()
    assert gpu_conv.patch_env(env) == 0


@pytest.mark.slow  # 10 to 12 s each on 2 cores (default-suite time); the rule itself is tested above on every conv shape
@pytest.mark.parametrize("config", ["tiny", pytest.param("wan2.2-tiny", marks=pytest.mark.heavy)])  # 2.2: 54 s
def test_gpu_rule_through_the_model_matches_pytorch(monkeypatch, config):
    """The whole GPU lowering, run on CPU with a bound small enough to split most convolutions, equals PyTorch."""
    row = backends.BACKENDS["gpu"]
    monkeypatch.setitem(backends.BACKENDS, "gpu", dataclasses.replace(row, conv_operand_limit=6000))
    vae = random_vae(config)
    ours = TorchaxVAE(vae)
    ours._family.lowered.platform = "cuda"  # traced as for a GPU, compiled and run for this CPU
    if hasattr(ours, "program_split"):
        ours.program_split = "batch"
    x = torch.randn(2, ours.video_channels, 5, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = vae.encode(x).latent_dist.mean
        actual = ours.encode(x).latent_dist.mean
        assert_close(actual, expected, TOLERANCE[torch.float32], f"{config} encode (GPU rule)")
        assert_close(ours.decode(expected).sample, vae.decode(expected).sample, TOLERANCE[torch.float32],
                     f"{config} decode (GPU rule)")
    pieces = [len(_convolutions(t)) for t in ours.lower("decode", tuple(expected.shape), "cuda").values()]
    whole = [len(_convolutions(t)) for t in ours.lower("decode", tuple(expected.shape), "tpu").values()]
    assert sum(pieces) > sum(whole), (pieces, whole)  # the bound did split convolutions


# ----- every released size, lowered for CUDA -----

RELEASED = [  # (config, frames, height, width); the default suite lowers CogVideoX 480p
    ("official", 49, 480, 720),  # CogVideoX 2b / 5b
    pytest.param("official", 81, 768, 1360, marks=pytest.mark.slow),  # CogVideoX 1.5
    pytest.param("wan2.1", 81, 480, 832, marks=pytest.mark.slow),
    pytest.param("wan2.1", 81, 720, 1280, marks=pytest.mark.slow),
    pytest.param("wan2.2", 121, 704, 1280, marks=pytest.mark.slow),  # Wan 2.2 TI2V-5B
    # The frame-window families (one program per clip shape), with -m slow: HunyuanVideo's pipeline default,
    # LTX-Video 0.9.x's (LTXPipeline: 161 frames at 512x704, one decoder call without framewise decoding)
    pytest.param("hunyuanvideo", 129, 720, 1280, marks=pytest.mark.slow),
    pytest.param("ltx090", 161, 512, 704, marks=pytest.mark.slow),
    pytest.param("ltx091", 161, 512, 704, marks=pytest.mark.slow),
    # LTX-2 (diffusers >= 0.37): LTX2Pipeline's default, 121 frames at 512x768, one decoder call
    *[pytest.param(name, 121, 512, 768, marks=pytest.mark.slow) for name in ("ltx2", "ltx2.3") if name in MODELS],
    # HunyuanVideo 1.5's whole 129-frame clip at 720p (untiled here), Allegro's 24 x 320 x 320 tiles of AllegroPipeline's
    # 88 x 720 x 1280
    pytest.param("hunyuanvideo15", 129, 720, 1280, marks=pytest.mark.slow),
    pytest.param("allegro", 88, 720, 1280, marks=pytest.mark.slow),
    # Mochi's and Cosmos's whole clips (untiled here), EasyAnimate's frame batches
    pytest.param("mochi", 163, 480, 848, marks=pytest.mark.slow),
    pytest.param("cosmos", 121, 704, 1280, marks=pytest.mark.slow),
    pytest.param("magvit", 49, 512, 512, marks=pytest.mark.slow),
]

_TENSOR = re.compile(r"tensor<((?:\d+x)+)(bf16|f32|f16)>")
_BYTES = {"bf16": 2, "f16": 2, "f32": 4}


def _tensor_bytes(spec: str) -> list[int]:
    return [int(np.prod([int(d) for d in dims.rstrip("x").split("x")])) * _BYTES[t] for dims, t in _TENSOR.findall(spec)]


def _convolutions(text: str) -> list[str]:
    """The type signature (operands -> result) of every convolution in a StableHLO module."""
    return [line.rsplit(" : ", 1)[-1] for line in text.splitlines() if "stablehlo.convolution" in line]


def _conv_operand_bytes(text: str) -> list[int]:
    """Per convolution, the larger of its input and output in bytes (the kernel is small and never split)."""
    sizes = [_tensor_bytes(signature) for signature in _convolutions(text)]
    return [max(s[0], s[-1]) for s in sizes]


def _pointwise_convolutions(text: str) -> list[str]:
    """Convolutions whose kernel (the second operand) is 1 in every spatial extent."""
    found = []
    for signature in _convolutions(text):
        kernel = _TENSOR.findall(signature)[1][0].rstrip("x").split("x")
        if all(d == "1" for d in kernel[2:]):
            found.append(signature)
    return found




@pytest.mark.slow  # 15 s a size: released sizes lowered for CUDA (CI: every sixth run)
@pytest.mark.parametrize("config,frames,height,width", RELEASED)
def test_released_sizes_lowered_for_cuda_keep_the_rule(config, frames, height, width):
    """bf16, untiled, the programs a GPU runs: no pointwise convolution, no operand of 2^31 bytes or more."""
    ours = TorchaxVAE(meta_vae(config), dtype=torch.bfloat16)
    if hasattr(ours, "tiling_mode"):
        ours.tiling_mode = "off"
    for kind in ("decode", "encode"):
        texts = ours.lower(kind, input_shape(ours, kind, frames, height, width), "cuda")
        if isinstance(ours, WindowVAE):  # untiled whole clips or windows: `lower` keys its texts by program
            # name, so one name per direction (HunyuanVideo's window shapes share it; the last one is checked), with
            # its options (Mochi's "+drop=5"), or EasyAnimate's first and cached batches
            assert {name.split("+")[0] for name in texts} == {"encoder" if kind == "encode" else "decoder"}, list(texts)
        elif type(ours).__name__ == "AllegroVAE":  # one tile program each way, and quant_conv after the encoder's
            assert list(texts) == (["encoder/tile", "quant_conv"] if kind == "encode" else ["decoder/tile"]), list(texts)
        elif hasattr(ours, "program_split"):  # CogVideoX: layer programs on GPUs, of both frame batches
            assert all("/stage" in name for name in texts) and any("+conv_cache" in name for name in texts), list(texts)
        else:  # the first batch and the steady one
            assert len(texts) == 2, list(texts)
        assert sum(len(_convolutions(text)) for text in texts.values()) > 0
        for name, text in texts.items():
            where = f"{config} {kind} {frames}x{height}x{width} {name}"
            if not _convolutions(text):  # a layer program without one (a sampler's, the output norm's)
                continue
            assert not _pointwise_convolutions(text), f"{where}: {_pointwise_convolutions(text)[:2]}"
            largest = max(_conv_operand_bytes(text))
            assert largest < gpu_conv.LIMIT, f"{where}: a convolution operand of {largest / 1e9:.3g} GB"


def test_other_backends_keep_the_stock_lowering():
    """TPU programs keep every convolution as torchax lowers it (the 768x1360 decoder: 5.9 GB operands on TPU)."""
    ours = TorchaxVAE(meta_vae("official"), dtype=torch.bfloat16)
    ours.tiling_mode = "off"
    ours.program_split = "batch"  # the same whole program for both (GPUs get layer programs by default)
    shape = input_shape(ours, "decode", 81, 768, 1360)
    tpu = ours.lower("decode", shape, "tpu")["decoder"]
    cuda = ours.lower("decode", shape, "cuda")["decoder"]
    assert _pointwise_convolutions(tpu) and max(_conv_operand_bytes(tpu)) > gpu_conv.LIMIT
    assert "stablehlo.dot_general" not in tpu and "stablehlo.dot_general" in cuda


def test_a_meta_model_lowers_but_does_not_run():
    ours = TorchaxVAE(meta_vae("tiny"))
    with pytest.raises(ValueError, match="meta device"):
        ours.decode(torch.zeros(1, 4, 2, 4, 4))

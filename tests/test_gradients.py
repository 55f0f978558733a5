"""Gradients through a TorchaxVAE reach its inputs, equal PyTorch's, and never vanish silently."""

import logging

import jax
import pytest
import torch
from helpers import TOLERANCE, assert_close, random_vae

from torchax_vae import TorchaxVAE

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(autouse=True)
def _no_grad():
    """Overrides conftest's: these tests need torch's grad mode."""
    with torch.enable_grad():
        yield


# CogVideoX's layer programs take 49 s to differentiate on 2 cores: with the official-config cases
# (CogVideoX's: 84 s on 2 cores (AMD), -m heavy; Wan's carries the gradients of a carried cache in CI)
@pytest.fixture(scope="module", params=[pytest.param("tiny", marks=[pytest.mark.slow, pytest.mark.heavy]),
                                        pytest.param("wan-tiny", marks=pytest.mark.slow)])
def pair(request):
    vae = random_vae(request.param)
    return vae, TorchaxVAE(vae)


def grads(fn, x, weight):
    """d/dx of sum(weight * fn(x)), and fn(x)."""
    x = x.detach().clone().requires_grad_(True)
    out = fn(x)
    (out * weight).sum().backward()
    return x.grad, out


def check_grads(vae, ours, x, z, what):
    generator = torch.Generator().manual_seed(5)
    encode_weight = torch.randn(vae.encode(x).latent_dist.mode().shape, generator=generator)
    decode_weight = torch.randn(vae.decode(z).sample.shape, generator=generator)
    for stage, theirs, mine, inputs, weight in [  # mode(): the mean, or Cosmos's identity posterior's latents
        ("encode", lambda v: vae.encode(v).latent_dist.mode(), lambda v: ours.encode(v).latent_dist.mode(), x, encode_weight),
        ("decode", lambda v: vae.decode(v).sample, lambda v: ours.decode(v).sample, z, decode_weight),
    ]:
        expected, _ = grads(theirs, inputs, weight)
        actual, out = grads(mine, inputs, weight)
        assert out.requires_grad and actual is not None, f"{what} {stage}: no gradient reached the input"
        assert_close(actual, expected, FP32, f"{what} {stage} gradient")


def test_gradients_equal_pytorchs(pair):
    vae, ours = pair
    x = torch.randn(1, 3, 5, 16, 16, generator=torch.Generator().manual_seed(0))
    z = torch.randn(1, ours.latent_channels, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    check_grads(vae, ours, x, z, type(ours).__name__)


@pytest.mark.slow  # 30 s: new programs to differentiate (checkpointed)
@pytest.mark.heavy  # 74 s on 2 cores (2026-11-28): out of CI's time; the default suite has gradients of each family
def test_gradients_with_slicing_and_checkpointing_equal_pytorchs():
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_slicing()
    ours.enable_gradient_checkpointing()  # each program runs again in the backward pass
    assert ours.is_gradient_checkpointing
    x = torch.randn(2, 3, 5, 16, 16, generator=torch.Generator().manual_seed(0))
    z = torch.randn(2, 16, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    check_grads(vae, ours, x, z, "Wan sliced, checkpointed")


@pytest.mark.slow  # 74 s: two tile shapes of two programs, differentiated (-m heavy: the untiled gradients are
@pytest.mark.heavy  # the default suite's; tiling is the same programs run per tile)
def test_tiled_decode_gradient_equals_pytorchs():
    vae = random_vae("wan-tiny")
    ours = TorchaxVAE(vae)
    tiles = dict(tile_sample_min_height=32, tile_sample_min_width=32, tile_sample_stride_height=16, tile_sample_stride_width=16)
    for model in (vae, ours):
        model.enable_tiling(**tiles)
    z = torch.randn(1, 16, 2, 6, 4, generator=torch.Generator().manual_seed(1))  # 2 x 1 latent tiles of 4x4
    weight = torch.randn(vae.decode(z).sample.shape, generator=torch.Generator().manual_seed(2))
    expected, _ = grads(lambda v: vae.decode(v).sample, z, weight)
    actual, _ = grads(lambda v: ours.decode(v).sample, z, weight)
    assert_close(actual, expected, FP32, "Wan tiled decode gradient")


def test_a_second_gradient_of_the_same_shape_compiles_nothing(pair, caplog):
    _, ours = pair
    z = torch.randn(1, ours.latent_channels, 2, 4, 4)
    weight = torch.randn(ours.decode(z).sample.shape)
    grads(lambda v: ours.decode(v).sample, z, weight)
    jax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING, logger="jax"):
            grads(lambda v: ours.decode(v).sample, z + 1, weight)
    finally:
        jax.config.update("jax_log_compiles", False)
    compiled = [r.getMessage() for r in caplog.records if "ompil" in r.getMessage()]
    assert compiled == [], compiled[:3]


def test_no_gradient_where_none_is_asked_for(pair):
    _, ours = pair
    z = torch.randn(1, ours.latent_channels, 2, 4, 4, requires_grad=True)
    with torch.no_grad():
        assert not ours.decode(z).sample.requires_grad
    assert not ours.decode(z.detach()).sample.requires_grad


def test_a_torchax_input_that_requires_grad_is_refused_not_detached():
    from torchax_vae import patches

    ours = TorchaxVAE(random_vae("wan-tiny"))
    env = patches.import_torchax().default_env()
    z = env.j2t_iso(jax.numpy.zeros((1, 16, 1, 4, 4)))
    z.requires_grad_(True)
    with pytest.raises(NotImplementedError, match="torchax tensor that requires grad"):
        ours.decode(z)


@pytest.mark.parametrize("name, video, latents", [
    ("hunyuan15-tiny", (1, 3, 5, 16, 16), (1, 4, 3, 4, 4)),
    # Haar wavelets and the identity posterior (its mode() is the latents)
    pytest.param("cosmos-tiny", (1, 3, 9, 32, 32), None, marks=pytest.mark.slow),
])
@pytest.mark.slow  # 13 s (CI: every sixth run)
def test_gradients_of_the_newer_families_equal_pytorchs(name, video, latents):
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    x = torch.randn(*video, generator=torch.Generator().manual_seed(0))
    z = torch.randn(*(latents or ours.latent_shape(video)), generator=torch.Generator().manual_seed(1))
    check_grads(vae, ours, x, z, name)


def check_grads_against_fp64(vae, ours, x, z, what):
    """Each input gradient held to the fp64 model's: no further from it than 1e-4 or twice PyTorch fp32's own
    distance from it, whichever is larger (the rule bf16 outputs have against fp32, docs/results/parity.md). For
    families whose tiny models have input gradients in the tens or hundreds, where fp32 itself is off by more
    than 1e-4 and 1e-4 against PyTorch fp32 would measure PyTorch's rounding as much as ours."""
    import copy

    exact = copy.deepcopy(vae).double()
    generator = torch.Generator().manual_seed(5)
    for stage, inputs, call in [("encode", x, lambda m, v: m.encode(v).latent_dist.mode()),
                                ("decode", z, lambda m, v: m.decode(v).sample)]:
        weight = torch.randn(call(vae, inputs).shape, generator=generator)
        truth, _ = grads(lambda v: call(exact, v), inputs.double(), weight.double())
        theirs, _ = grads(lambda v: call(vae, v), inputs, weight)
        actual, out = grads(lambda v: call(ours, v), inputs, weight)
        assert out.requires_grad and actual is not None, f"{what} {stage}: no gradient reached the input"
        pytorch = (theirs.double() - truth).abs().max().item()
        assert_close(actual.double(), truth, max(FP32, 2 * pytorch),
                     f"{what} {stage} gradient against fp64 (PyTorch fp32: {pytorch:.3g}, largest {truth.abs().max():.3g})")


# Measured (ours / PyTorch fp32, max |Δ| from fp64; largest gradient): Mochi encode 9.9e-4 / 1.4e-3 (298),
# EasyAnimate decode 1.2e-4 / 7.4e-5 (28), Allegro decode: PyTorch 7.4e-4 (about 140). Against PyTorch fp32
# directly, Mochi's encode gradients were 2.2e-3 apart and EasyAnimate's decode 1.3e-4.
@pytest.mark.slow  # 1.5 min on 2 cores together: Allegro's one 24 x 128 x 128 tile each way, in fp64 too
@pytest.mark.heavy  # (the newer families' gradients at tiny sizes are the default suite's)
@pytest.mark.parametrize("name, video", [
    ("mochi-tiny", (1, 3, 7, 16, 24)),  # whole clips with the Fourier-feature encoder
    ("magvit-tiny", (1, 3, 5, 16, 24)),  # the first frame, then a batch continuing from the modules' cache
    ("allegro-tiny", (1, 3, 24, 128, 128)),  # diffusers' class encodes and decodes only tiled
])
def test_gradients_of_large_gradient_families_against_fp64(name, video):
    vae = random_vae(name)
    if name == "allegro-tiny":
        vae.enable_tiling()
    ours = TorchaxVAE(vae)
    x = torch.randn(*video, generator=torch.Generator().manual_seed(0))
    z = torch.randn(*ours.latent_shape(video), generator=torch.Generator().manual_seed(1))
    check_grads_against_fp64(vae, ours, x, z, name)

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
@pytest.fixture(scope="module", params=[pytest.param("tiny", marks=pytest.mark.slow), "wan-tiny"])
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
    encode_weight = torch.randn(vae.encode(x).latent_dist.mean.shape, generator=generator)
    decode_weight = torch.randn(vae.decode(z).sample.shape, generator=generator)
    for stage, theirs, mine, inputs, weight in [
        ("encode", lambda v: vae.encode(v).latent_dist.mean, lambda v: ours.encode(v).latent_dist.mean, x, encode_weight),
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


@pytest.mark.slow  # 74 s: two tile shapes of two programs, differentiated
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


# (Allegro's are not here yet: its tiny decode's input gradient reaches 142, where PyTorch fp32 is 7.4e-4 from fp64
# and this 1.9e-3 from PyTorch fp32; the comparison against fp64 is still to write: docs/limits.md.)
@pytest.mark.parametrize("name, video, latents", [("hunyuan15-tiny", (1, 3, 5, 16, 16), (1, 4, 3, 4, 4))])
def test_gradients_of_the_newer_families_equal_pytorchs(name, video, latents):
    vae = random_vae(name)
    ours = TorchaxVAE(vae)
    x = torch.randn(*video, generator=torch.Generator().manual_seed(0))
    z = torch.randn(*latents, generator=torch.Generator().manual_seed(1))
    check_grads(vae, ours, x, z, name)

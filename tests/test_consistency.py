"""diffusers' ConsistencyDecoderVAE (OpenAI's consistency decoder, SD 1.x's `vae=`) on JAX against the same model in
PyTorch: AutoencoderKL's encode, and the two-step UNet decode whose noise comes from the call's generator
(models/consistency.py); StableDiffusionPipeline with it: tests/diffusers/test_pipeline_outputs.py."""

import threading

import numpy as np
import pytest
import torch
from diffusers import ConsistencyDecoderVAE
from helpers import TOLERANCE, assert_close, max_abs_diff, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

ATOL = TOLERANCE[torch.float32]


pair = pair_fixture("consistency-tiny")


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@torch.no_grad()
@pytest.mark.parametrize("size", [(32, 32), (24, 40)])
def test_encode_and_decode_match_pytorch(pair, size):
    """Encode as AutoencoderKL's; decode with a generator draws the noise diffusers draws (the same images); forward
    encodes and decodes with one generator."""
    vae, ours = pair
    x = randn(2, 3, *size, seed=1)
    expected, actual = vae.encode(x).latent_dist, ours.encode(x).latent_dist
    for stat in ("mean", "logvar"):
        assert_close(getattr(actual, stat), getattr(expected, stat), ATOL, f"encode's posterior {stat} {size}")
    assert_close(actual.sample(generator=seeded(7)), expected.sample(generator=seeded(7)), ATOL, "posterior sample")
    z = randn(2, 4, size[0] // 2, size[1] // 2, seed=2)
    expected = vae.decode(z, generator=seeded(3)).sample
    assert expected.shape == (2, 3, *size) and expected.std() > 1e-2
    assert_close(ours.decode(z, generator=seeded(3)).sample, expected, ATOL, f"decode(z, generator) {size}")
    assert_close(ours.decode(z, seeded(3), return_dict=False)[0], expected, ATOL, "decode, positional generator")
    assert max_abs_diff(vae.decode(z, generator=seeded(4)).sample, expected) > 1e-2  # the noise matters
    torch.manual_seed(5)
    theirs = vae.decode(z).sample
    torch.manual_seed(5)
    assert_close(ours.decode(z).sample, theirs, ATOL, "decode without a generator: torch's global one")
    for posterior in (False, True):
        assert_close(ours(x, sample_posterior=posterior, generator=seeded(6)).sample,
                     vae(x, sample_posterior=posterior, generator=seeded(6)).sample, ATOL, f"forward {posterior}")


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
@torch.no_grad()
def test_tiled_and_sliced_encode_match_pytorch(pair):
    """diffusers' `tiled_encode` (tiles of tile_sample_min_size, blended) and `enable_tiling`, and slicing."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    x = randn(2, 3, 48, 56, seed=7)
    assert_close(ours.tiled_encode(x).latent_dist.mean, vae.tiled_encode(x).latent_dist.mean, ATOL, "tiled_encode")
    ours.enable_tiling()
    assert ours.use_tiling and not vae.use_tiling
    assert_close(ours.encode(x).latent_dist.mean, vae.tiled_encode(x).latent_dist.mean, ATOL, "encode, tiling on")
    ours.disable_tiling()
    ours.enable_slicing()
    assert_close(ours.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, ATOL, "encode, sliced")
    z = randn(2, 4, 8, 8, seed=8)  # decode is never sliced (diffusers' draws noise for the whole batch)
    assert_close(ours.decode(z, generator=seeded(9)).sample, vae.decode(z, generator=seeded(9)).sample, ATOL,
                 "decode with slicing on")


def test_interface_as_diffusers_class(pair, tmp_path):
    vae, ours = pair
    assert type(ours).__name__ == "ConsistencyDecoderVAEModel" and isinstance(ours, ConsistencyDecoderVAE)
    assert ours.decode_draws_noise
    for name in ("tiled_encode", "tiled_decode", "enable_tiling", "unpack_latents", "fuse_qkv_projections"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    z = randn(1, 4, 8, 8)
    with pytest.raises(ValueError, match="num_inference_steps must be 2, got 4"):
        ours.decode(z, num_inference_steps=4)
    with pytest.raises(ValueError, match="3 channels .* expects 4"):
        ours.decode(randn(1, 3, 8, 8))
    with pytest.raises(ValueError, match="4-D"):
        ours.decode(randn(1, 4, 1, 8, 8))
    ours.save_pretrained(tmp_path)
    plain = ConsistencyDecoderVAE.from_pretrained(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_bf16_within_twice_pytorchs_error(pair):
    vae, _ = pair
    ours = TorchaxVAE(vae, dtype=torch.bfloat16)
    half = random_vae("consistency-tiny").to(torch.bfloat16)
    x, z = randn(2, 3, 32, 32, seed=10), randn(2, 4, 16, 16, seed=11)
    with torch.no_grad():
        encoded, decoded = vae.encode(x).latent_dist.mean, vae.decode(z, generator=seeded(12)).sample
        theirs = {"encode": max_abs_diff(half.encode(x.bfloat16()).latent_dist.mean, encoded),
                  "decode": max_abs_diff(half.decode(z.bfloat16(), generator=seeded(12)).sample, decoded)}
        mine = {"encode": max_abs_diff(ours.encode(x.bfloat16()).latent_dist.mean, encoded),
                "decode": max_abs_diff(ours.decode(z.bfloat16(), generator=seeded(12)).sample, decoded)}
    for stage in mine:
        assert mine[stage] <= 2 * theirs[stage], \
            f"bf16 {stage}: max |Δ| {mine[stage]:.3g}, PyTorch's {theirs[stage]:.3g}"


def test_threads_draw_from_their_own_generators(pair):
    """Four threads at once, each decoding with its own seed: each gets the images of its own noise."""
    vae, ours = pair
    z = randn(1, 4, 8, 8, seed=13)
    with torch.no_grad():
        expected = [vae.decode(z, generator=seeded(20 + i)).sample for i in range(4)]
    out = [None] * 4

    def run(i):
        with torch.no_grad():
            out[i] = ours.decode(z, generator=seeded(20 + i)).sample

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert_close(out[i], expected[i], ATOL, f"thread {i}")


@pytest.mark.slow  # 15 s: three front ends of one image family (CI: every sixth run)
def test_plan_command_and_service(pair, tmp_path, capsys):
    """`plan` compiles the one decode program (its noise as inputs) for a GPU target offline; `torchax-vae decode
    --seed` draws the decode's noise from a generator of that seed (diffusers' images within one uint8 step); the
    service's decode draws it from its request's seed (0 from diffusers' client) within 1e-4."""
    from diffusers.utils.remote_utils import remote_decode
    from PIL import Image
    from serving import serving

    from torchax_vae.cli import main
    from torchax_vae.serve import create_app

    vae, ours = pair
    planned = ours.plan("decode", (1, 4, 16, 16), "h100")
    assert [row.name for row in planned.programs] == ["decoder"] and planned.fits
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(2, 4, 8, 8, seed=14)  # as SD's pipeline holds latents: scaled (this config's scaling_factor is 1)
    torch.save(z, tmp_path / "latents.pt")
    with torch.no_grad():
        expected = vae.decode(z / vae.config.scaling_factor, generator=seeded(3)).sample
    args = ["--model", str(tmp_path / "model"), "--no-cache", "--seed", "3"]
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "out.png"), *args]) == 0
    capsys.readouterr()
    levels = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    for i in range(2):
        got = np.asarray(Image.open(tmp_path / f"out_{i}.png"))
        assert np.abs(got.astype(int) - levels[i]).max() <= 1, i
    with torch.no_grad():
        unseeded = vae.decode(z / vae.config.scaling_factor, generator=seeded(0)).sample
    with serving(create_app({"consistency": TorchaxVAE(vae)})) as base:  # (diffusers' client sends no seed: 0)
        raw = remote_decode(endpoint=f"{base}/decode/consistency", tensor=z, output_type="pt", return_type="pt")
    assert_close(raw, unseeded, ATOL, "served decode, seed 0")


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_gradients_reach_the_latents_as_in_pytorch(pair):
    """decode's gradient with respect to the latents, with the noise of one generator seed each side."""
    vae, ours = pair
    z = randn(1, 4, 8, 8, seed=15)
    grads = []
    for model in (vae, ours):
        x = z.clone().requires_grad_()
        with torch.enable_grad():  # (the suite runs under no_grad)
            model.decode(x, generator=seeded(16)).sample.square().sum().backward()
        grads.append(x.grad)
    assert grads[0].abs().max() > 1e-2
    assert_close(grads[1], grads[0], ATOL * max(1.0, float(grads[0].abs().max())), "decode's gradient")

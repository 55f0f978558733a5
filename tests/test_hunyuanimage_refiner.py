"""AutoencoderKLHunyuanImageRefiner (HunyuanImage 2.1's refiner VAE) through TorchaxVAE against the same model in
plain PyTorch: one-frame images as its pipeline passes them, and videos; untiled, as its pipeline runs it."""

import pytest
import torch
from helpers import (TOLERANCE, assert_close, bf16_check, check_encode_decode, deltas_on_8_devices, needs, pair_fixture, randn, random_vae)

from torchax_vae import TorchaxVAE

pytestmark = needs("hunyuanimage-refiner-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("hunyuanimage-refiner-tiny")


@pytest.mark.parametrize("frames", [1, 3])
def test_encode_and_decode_match_pytorch(pair, frames):
    vae, ours = pair
    x = randn(2, 3, frames, 16, 24, seed=frames)
    with torch.no_grad():
        check_encode_decode(vae, ours, x, f"refiner, {frames} frames")
        assert ours.latent_shape(tuple(x.shape)) == tuple(vae.encode(x).latent_dist.mean.shape)


def test_the_pipelines_stage_3_slicing_and_streaming(pair):
    """HunyuanImageRefinerPipeline's decode: latents / scaling_factor, one frame, the frame axis squeezed; sliced
    the same; decode_stream one chunk equal to decode."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    latents = randn(2, 4, 1, 4, 6, seed=5)
    with torch.no_grad():
        expected = vae.decode(latents / vae.config.scaling_factor, return_dict=False)[0].squeeze(2)
        assert_close(ours.decode(ours.unscale_latents(latents), return_dict=False)[0].squeeze(2), expected, FP32,
                     "the pipeline's decode")
        ours.enable_slicing()
        assert_close(ours.decode(latents).sample, vae.decode(latents).sample, FP32, "sliced")
        ours.disable_slicing()
        chunks = list(ours.decode_stream(latents))
        assert len(chunks) == 1 and torch.equal(chunks[0], ours.decode(latents).sample)


def test_untiled_only_and_bad_input(pair):
    """diffusers' tiled paths for this class give another size (or fail): refused in one line here."""
    vae, ours = pair
    with torch.no_grad():  # what diffusers' own tiled decode does: 16x16 latents to 18x18, not 64x64
        tiled = random_vae("hunyuanimage-refiner-tiny")
        tiled.enable_tiling(tile_sample_min_height=32, tile_sample_min_width=32)
        assert tiled.decode(randn(1, 4, 1, 16, 16)).sample.shape[-2:] == (18, 18)
    for call in (ours.enable_tiling, lambda: ours.tiled_decode(randn(1, 4, 1, 4, 4)),
                 lambda: ours.tiled_encode(randn(1, 3, 1, 16, 16))):
        with pytest.raises(NotImplementedError, match="runs untiled here"):
            call()
    with pytest.raises(ValueError, match="multiples of 4"):
        ours.encode(randn(1, 3, 1, 18, 16))


def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(2, 3, 1, 16, 24, seed=6), "refiner")
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


MESH_SCRIPT = """
import json, torch
from helpers import random_vae
from torchax_vae import TorchaxVAE, make_mesh
vae = random_vae("hunyuanimage-refiner-tiny")
ours = TorchaxVAE(vae, mesh=make_mesh())
x = torch.randn(2, 3, 1, 32, 32, generator=torch.Generator().manual_seed(9))
with torch.no_grad():
    z = vae.encode(x).latent_dist.mean
    rows = {"devices": ours.mesh.devices.size, "encode": (ours.encode(x).latent_dist.mean - z).abs().max().item(),
            "decode": (ours.decode(z).sample - vae.decode(z).sample).abs().max().item()}
    # traced as for GPUs (torchax_vae/patches/halo_conv.py: the causal convolutions split with their neighbours' edge rows,
    # not XLA's halo-padded copy), compiled and run on this CPU mesh
    gpu = TorchaxVAE(vae, mesh=make_mesh())
    gpu._family.lowered.platform = "cuda"
    x = torch.randn(1, 3, 1, 64, 128, generator=torch.Generator().manual_seed(10))
    z = vae.encode(x).latent_dist.mean
    rows["gpu-traced encode"] = (gpu.encode(x).latent_dist.mean - z).abs().max().item()
    rows["gpu-traced decode"] = (gpu.decode(z).sample - vae.decode(z).sample).abs().max().item()
    split = sum(text.count("manual_computation") for text in gpu.lower("decode", tuple(z.shape), "cuda").values())
    assert split > 0, "no split convolution in the GPU-traced decode"  # (XLA's partitioner then splits them: 0)
print(json.dumps(rows))
"""


@pytest.mark.slow  # a second process on 8 virtual devices
@pytest.mark.rotate  # beyond the contract's mesh check (tests/contract): in CI a slice of these at a time
def test_on_8_devices_matches_pytorch():
    deltas_on_8_devices(MESH_SCRIPT, FP32)

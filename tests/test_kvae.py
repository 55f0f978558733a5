"""diffusers' AutoencoderKLKVAE (Kandinsky's image VAE, KVAE 2D) on JAX against the same model in PyTorch: encode,
decode, diffusers' tiles and slicing, bf16, the mesh, the command and the service (models/kvae.py)."""

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, needs, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("kvae-tiny")

ATOL = TOLERANCE[torch.float32]


pair = pair_fixture("kvae-tiny")


@torch.no_grad()
@pytest.mark.parametrize("size", [(32, 32), (24, 40)])
def test_encode_and_decode_match_pytorch(pair, size):
    vae, ours = pair
    x = randn(2, 3, *size, seed=1)
    check_encode_decode(vae, ours, x, f"KVAE {size}")
    assert_close(ours(x).sample, vae(x).sample, ATOL, "forward")
    assert vae.decode(vae.encode(x).latent_dist.mean).sample.std() > 1e-2  # an output that tells a wrong decode


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
@torch.no_grad()
def test_tiles_and_slices_as_diffusers():
    """diffusers' tiles (smaller than the images here: 16-pixel tiles, 8 latent) and slicing, each way."""
    vae = random_vae("kvae-tiny")
    ours = TorchaxVAE(vae)
    for model in (vae, ours):
        model.enable_tiling()
        model.tile_sample_min_size, model.tile_latent_min_size = 16, 8
    x = randn(2, 3, 40, 56, seed=2)
    z = vae.encode(x).latent_dist.mean
    assert_close(ours.encode(x).latent_dist.mean, z, ATOL, "tiled encode")
    assert_close(ours.decode(z).sample, vae.decode(z).sample, ATOL, "tiled decode")
    assert len({tuple(s["input_shapes"][-1]) for s in ours.compile_stats()}) > 2  # tile programs ran
    vae.disable_tiling()
    ours.disable_tiling()
    ours.enable_slicing()
    assert_close(ours.decode(z).sample, vae.decode(z).sample, ATOL, "sliced decode")


def test_interface_bf16_and_saving(pair, tmp_path):
    from diffusers import AutoencoderKLKVAE

    vae, ours = pair
    assert type(ours).__name__ == "KVAEModel" and isinstance(ours, AutoencoderKLKVAE)
    assert ours.latent_channels == 4 and ours.spatial_compression_ratio == 2
    for name in ("tiled_encode", "_tiled_encode", "tiled_decode", "unpack_latents", "fuse_qkv_projections"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    with pytest.raises(ValueError, match="3 channels .* expects 4"):
        ours.decode(randn(1, 3, 8, 8))
    with torch.no_grad():
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 32, seed=3), "KVAE")
    ours.save_pretrained(tmp_path)
    plain = AutoencoderKLKVAE.from_pretrained(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


def test_command_and_service(pair, tmp_path, capsys):
    """`torchax-vae decode` writes diffusers' decode (no latent normalization: the class has none) within one uint8
    step; the service's decode is it within 1e-4."""
    from diffusers.utils.remote_utils import remote_decode
    from PIL import Image
    from serving import serving

    from torchax_vae.cli import main
    from torchax_vae.serve import create_app

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(2, 4, 8, 8, seed=4)
    torch.save(z, tmp_path / "latents.pt")
    with torch.no_grad():
        expected = vae.decode(z).sample
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "out.png"), "--model",
                 str(tmp_path / "model"), "--no-cache"]) == 0
    capsys.readouterr()
    levels = ((expected / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    for i in range(2):
        assert np.abs(np.asarray(Image.open(tmp_path / f"out_{i}.png")).astype(int) - levels[i]).max() <= 1, i
    with serving(create_app({"kvae": TorchaxVAE(vae)})) as base:
        raw = remote_decode(endpoint=f"{base}/decode/kvae", tensor=z, output_type="pt", return_type="pt")
    assert_close(raw, expected, ATOL, "served decode")

"""diffusers' AutoencoderRAE (a DINOv2 encoder and a ViT decoder, no pipeline) on JAX against the same model in
PyTorch: encode, decode, forward, slicing, bf16, saving, the mesh, the command and the service (models/rae.py)."""

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, bf16_check, needs, pair_fixture, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("rae-tiny")

ATOL = TOLERANCE[torch.float32]


def images(*shape, seed=0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))  # pixels in [0, 1], as RAE takes them


pair = pair_fixture("rae-tiny")


@torch.no_grad()
@pytest.mark.parametrize("size", [(56, 56), (40, 72)])
def test_encode_decode_and_forward_match_pytorch(pair, size):
    """Any image size (the encoder's 56x56 input, and one it resizes), its DINOv2 position grid resized with
    antialiased bicubic interpolation: the latents, their decode and forward within 1e-4; slicing too."""
    vae, ours = pair
    x = images(2, 3, *size, seed=1)
    z = vae.encode(x).latent
    assert z.shape == (2, 64, 4, 4) and z.std() > 0.1
    assert_close(ours.encode(x).latent, z, ATOL, f"RAE encode {size}")
    expected = vae.decode(z).sample
    assert expected.shape == (2, 3, 16, 16) and expected.std() > 1e-2  # an output that tells a wrong decode
    assert_close(ours.decode(z).sample, expected, ATOL, "RAE decode")
    assert_close(ours(x).sample, vae(x).sample, ATOL, "RAE forward")
    ours.enable_slicing()
    try:
        assert_close(ours.decode(z).sample, expected, ATOL, "RAE sliced decode")
    finally:
        ours.disable_slicing()


@pytest.mark.slow  # 11 s (CI: every sixth run)
def test_interface_bf16_and_saving(pair, tmp_path):
    from diffusers import AutoencoderRAE

    vae, ours = pair
    assert type(ours).__name__ == "RAEVAE" and isinstance(ours, AutoencoderRAE)
    assert ours.latent_channels == 64 and ours.spatial_compression_ratio == 4
    assert ours.latent_shape((2, 3, 300, 200)) == (2, 64, 4, 4)
    for name in ("tiled_encode", "tiled_decode", "_tiled_encode", "unpack_latents", "enable_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    for model in (vae, ours):
        with pytest.raises(NotImplementedError, match="Tiling doesn't seem to be implemented"):
            model.enable_tiling()
    with pytest.raises(ValueError, match="32 channels .* expects 64"):
        ours.decode(torch.zeros(1, 32, 4, 4))
    with pytest.raises(ValueError, match="square grid .* got 2x8"):
        ours.decode(torch.zeros(1, 64, 2, 8))
    with torch.no_grad():
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), images(1, 3, 56, 56, seed=3), "RAE",
                   latents=lambda model, x: model.encode(x).latent)
    ours.save_pretrained(tmp_path)
    plain = AutoencoderRAE.from_pretrained(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))
    from vaes import MODELS

    noisy = TorchaxVAE(AutoencoderRAE(**{**MODELS["rae-tiny"][1], "noise_tau": 0.5})).train()
    with pytest.raises(ValueError, match=r"differ in training mode \(its encoder's noise \(noise_tau=0.5\)\)"):
        noisy.encode(images(1, 3, 56, 56))
    assert noisy.eval().encode(images(1, 3, 56, 56)).latent.shape == (1, 64, 4, 4)  # eval: no noise, as diffusers
    tokens = random_vae("rae-tiny")
    tokens.reshape_to_2d = False
    with pytest.raises(ValueError, match="reshape_to_2d=False"):
        TorchaxVAE(tokens)


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_command_and_service(pair, tmp_path, capsys):
    """`torchax-vae decode` writes diffusers' decode as PNGs of its [0, 1] pixels within one uint8 step, `encode` of
    such a PNG gives diffusers' latents of its pixels; the service's decode is diffusers' within 1e-4."""
    from diffusers.utils.remote_utils import remote_decode
    from PIL import Image
    from serving import serving

    from torchax_vae.cli import main
    from torchax_vae.serve import create_app

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    with torch.no_grad():
        z = vae.encode(images(2, 3, 56, 56, seed=4)).latent
        expected = vae.decode(z).sample
    torch.save(z, tmp_path / "latents.pt")
    model = ["--model", str(tmp_path / "model"), "--no-cache"]
    assert main(["decode", str(tmp_path / "latents.pt"), "-o", str(tmp_path / "out.png"), *model]) == 0
    levels = (expected.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    for i in range(2):
        assert np.abs(np.asarray(Image.open(tmp_path / f"out_{i}.png")).astype(int) - levels[i]).max() <= 1, i
    assert main(["encode", str(tmp_path / "out_0.png"), "-o", str(tmp_path / "z.pt"), *model]) == 0
    capsys.readouterr()
    pixels = torch.from_numpy(np.array(Image.open(tmp_path / "out_0.png"))).permute(2, 0, 1)[None].float() / 255
    with torch.no_grad():
        assert_close(torch.load(tmp_path / "z.pt"), vae.encode(pixels).latent, ATOL, "the command's encode")
    with serving(create_app({"rae": TorchaxVAE(vae)})) as base:
        raw = remote_decode(endpoint=f"{base}/decode/rae", tensor=z, output_type="pt", return_type="pt")
    assert_close(raw, expected, ATOL, "served decode")

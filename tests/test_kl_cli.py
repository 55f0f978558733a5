"""`torchax-vae decode` / `encode` with an image VAE (AutoencoderKL): PNG and .npy images, BCHW latents, in-process."""

import functools

import numpy as np
import pytest
import torch
from helpers import randn, random_vae
from PIL import Image
from test_cli import _bad

from torchax_vae import TorchaxVAE
from torchax_vae.cli import main as cli_main


def _uint8(images: torch.Tensor) -> np.ndarray:  # [B, C, H, W] in [-1, 1] -> [B, H, W, C], as VaeImageProcessor
    return ((images / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()


def test_decode_to_png_and_npy_then_encode_back(tmp_path, capsys):
    vae = random_vae("flux-tiny")
    vae.save_pretrained(tmp_path / "flux")
    ours = TorchaxVAE(vae)
    z = randn(2, 16, 8, 12, seed=1)
    np.save(tmp_path / "z.npy", z.numpy())
    expected = _uint8(vae.decode(z / vae.config.scaling_factor + vae.config.shift_factor).sample.detach())

    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "out.png"), "--model",
                     str(tmp_path / "flux"), "--no-cache"]) == 0
    assert "2 images 16x24" in capsys.readouterr().out
    for i in range(2):  # one PNG per image of the batch, as the pipeline's VaeImageProcessor makes it
        pixels = np.asarray(Image.open(tmp_path / f"out_{i}.png"))
        assert np.abs(pixels.astype(int) - expected[i]).max() <= 1, f"image {i} off by more than one level"
    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "exact.npy"), "--model",
                     str(tmp_path / "flux"), "--no-cache"]) == 0
    assert np.load(tmp_path / "exact_0.npy").shape == (1, 16, 24, 3)

    assert cli_main(["encode", str(tmp_path / "out_0.png"), "-o", str(tmp_path / "latents.safetensors"), "--model",
                     str(tmp_path / "flux"), "--no-cache"]) == 0
    assert "from a 16x24 image" in capsys.readouterr().out
    from safetensors.torch import load_file

    latents = load_file(tmp_path / "latents.safetensors")["latents"]
    x = torch.from_numpy(np.array(Image.open(tmp_path / "out_0.png"))).permute(2, 0, 1)[None].float() / 127.5 - 1
    mode = ours.encode(x).latent_dist.mode()
    scaled = (mode - vae.config.shift_factor) * vae.config.scaling_factor  # as Flux's img2img pipelines
    assert latents.shape == (1, 16, 8, 12) and (latents - scaled).abs().max().item() <= 1e-4


def test_image_vae_refuses_video_paths_with_one_line(tmp_path, capsys):
    random_vae("kl-tiny").save_pretrained(tmp_path / "kl")
    np.save(tmp_path / "z.npy", np.zeros((1, 4, 8, 8), np.float32))
    np.save(tmp_path / "z5.npy", np.zeros((1, 4, 1, 8, 8), np.float32))
    np.save(tmp_path / "z16.npy", np.zeros((1, 16, 8, 8), np.float32))
    bad = functools.partial(_bad, capsys, tmp_path)
    model = ("--model", tmp_path / "kl")
    bad("decode", tmp_path / "z.npy", "-o", tmp_path / "out.mp4", *model, expect="decodes images; write .png")
    bad("decode", tmp_path / "z5.npy", "-o", tmp_path / "out.png", *model, expect="must be 4-D [B, C, H, W]")
    bad("decode", tmp_path / "z16.npy", "-o", tmp_path / "out.png", *model, expect="decoder takes 4")
    random_vae("tiny").save_pretrained(tmp_path / "video")  # a video VAE refuses an image output and 4-D latents
    bad("decode", tmp_path / "z.npy", "-o", tmp_path / "out.png", "--model", tmp_path / "video",
        expect="decodes videos; write .mp4")
    bad("decode", tmp_path / "z.npy", "-o", tmp_path / "out.mp4", "--model", tmp_path / "video", expect="must be 5-D")



@pytest.mark.parametrize("config", ["dc-tiny", "flux2-tiny"])
def test_sana_and_flux2_vaes_through_the_command(config, tmp_path, capsys):
    """AutoencoderDC (latents with no posterior, `z / scaling_factor`) and AutoencoderKLFlux2 (`bn`'s statistics):
    decode to .npy (uint8) as each pipeline de-normalizes, encode a PNG back to its normalized latents."""
    from safetensors.torch import load_file

    vae = random_vae(config)
    if hasattr(vae, "bn"):
        vae.bn.running_mean.normal_(generator=torch.Generator().manual_seed(0))
        vae.bn.running_var.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(1))
    vae.save_pretrained(tmp_path / "vae")
    ours = TorchaxVAE(vae)
    z = randn(1, vae.config.latent_channels, 8, 12, seed=1)
    np.save(tmp_path / "z.npy", z.numpy())
    model = ["--model", str(tmp_path / "vae"), "--no-cache"]
    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "out.npy"), *model]) == 0
    expected = _uint8(vae.decode(ours.unscale_latents(z)).sample.detach())
    got = np.load(tmp_path / "out.npy")  # one image: no index in the name; uint8 [1, H, W, C]
    assert got.shape == expected.shape and np.abs(got.astype(int) - expected).max() <= 1

    assert cli_main(["decode", str(tmp_path / "z.npy"), "-o", str(tmp_path / "out.png"), *model]) == 0
    assert cli_main(["encode", str(tmp_path / "out.png"), "-o", str(tmp_path / "z.safetensors"), *model]) == 0
    capsys.readouterr()
    x = torch.from_numpy(np.array(Image.open(tmp_path / "out.png"))).permute(2, 0, 1)[None].float() / 127.5 - 1
    out = vae.encode(x)
    latents = out.latent if hasattr(out, "latent") else out.latent_dist.mode()
    got = load_file(tmp_path / "z.safetensors")["latents"]
    assert (got - ours.scale_latents(latents)).abs().max().item() <= 1e-4

"""diffusers' AsymmetricAutoencoderKL (SD inpainting's asymmetric VAE) on JAX against the same model in PyTorch,
its decoder conditioned on the image and mask (models/asym_kl.py); StableDiffusionInpaintPipeline with it:
tests/diffusers/test_pipeline_outputs.py."""

import copy

import pytest
import torch
from diffusers import AsymmetricAutoencoderKL

from helpers import TOLERANCE, assert_close, bf16_check, check_encode_decode, randn
from torchax_vae import TorchaxVAE

ATOL = TOLERANCE[torch.float32]
# diffusers' own test config (tests/models/autoencoders/test_models_asymmetric_autoencoder_kl.py, 58eb52c) and one of
# three levels (4x), as SD's inpainting fast tests' VAE is shaped
CONFIGS = {
    "diffusers-test": dict(down_block_out_channels=[2, 4], up_block_out_channels=[2, 4], layers_per_down_block=1,
                           layers_per_up_block=1, latent_channels=4, norm_num_groups=2, sample_size=32,
                           down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2),
    "three-levels": dict(down_block_out_channels=[8, 16, 16], up_block_out_channels=[8, 16, 16],
                         layers_per_down_block=1, layers_per_up_block=1, latent_channels=4, norm_num_groups=4,
                         sample_size=32, down_block_types=["DownEncoderBlock2D"] * 3,
                         up_block_types=["UpDecoderBlock2D"] * 3),
}


def asymmetric(name: str) -> AsymmetricAutoencoderKL:
    torch.manual_seed(0)
    return AsymmetricAutoencoderKL(**CONFIGS[name]).eval()


def half_mask(batch: int, size: int) -> torch.Tensor:
    mask = torch.zeros(batch, 1, size, size)
    mask[..., size // 4: 3 * size // 4, size // 3:] = 1.0  # 1: repaint, 0: keep the image
    return mask


@torch.no_grad()
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encode_decode_and_the_conditioned_decoder_match_pytorch(name):
    vae = asymmetric(name)
    ours = TorchaxVAE(vae)
    x = randn(2, 3, 32, 32, seed=1)
    check_encode_decode(vae, ours, x, name)
    z = vae.encode(x).latent_dist.mode()
    mask = half_mask(2, 32)
    expected = vae.decode(z, None, x, mask).sample
    assert_close(ours.decode(z, None, x, mask).sample, expected, ATOL, f"{name} decode(z, image, mask)")
    assert (expected - vae.decode(z).sample).abs().max() > 1e-2  # the condition changes the output
    assert_close(ours(x, mask).sample, vae(x, mask).sample, ATOL, f"{name} forward(sample, mask)")
    names = sorted(stats["name"] for stats in ours.compile_stats())
    assert names == ["decoder", "decoder+mask", "encoder"], names  # one program each, the condition its own


def test_interface_errors_bf16_and_saving(tmp_path):
    vae = asymmetric("three-levels")
    ours = TorchaxVAE(vae)
    assert isinstance(ours, AsymmetricAutoencoderKL)
    assert not any(hasattr(ours, name) for name in ("tiled_encode", "tiled_decode", "use_tiling", "use_slicing"))
    for method in ("enable_tiling", "enable_slicing"):
        with pytest.raises(NotImplementedError) as theirs:
            getattr(copy.deepcopy(vae), method)()
        with pytest.raises(NotImplementedError, match=str(theirs.value)):
            getattr(ours, method)()
    z = randn(1, 4, 8, 8, seed=2)
    with pytest.raises(ValueError, match=r"decode's mask must be a tensor \[1, 1, 32, 32\] for latents \(1, 4, 8, 8\)"):
        ours.decode(z, None, randn(1, 3, 32, 32), torch.ones(1, 1, 16, 16))
    with torch.no_grad():
        bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(1, 3, 32, 32, seed=3), "asymmetric kl")
    ours.save_pretrained(tmp_path)
    with torch.no_grad():
        assert_close(AsymmetricAutoencoderKL.from_pretrained(tmp_path).decode(z).sample, vae.decode(z).sample, 0.0,
                     "plain diffusers, reloaded")

"""AutoencoderKLMiniMaxH3Audio (MiniMax H3's mono audio VAE) through TorchaxVAE against the same model in PyTorch."""


import pytest
import torch
from helpers import TOLERANCE, assert_close, needs, pair_fixture

from torchax_vae import TorchaxVAE

pytestmark = needs("minimaxh3-audio-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("minimaxh3-audio-tiny")


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("samples", [32, 33, 100])
def test_encode_and_decode_match_pytorch(pair, samples):
    """Any length: diffusers pads on the right to whole hops (4 here), and decodes latents x hop samples."""
    vae, ours = pair
    x = randn(2, 1, samples, seed=samples)  # a stereo clip as MiniMax H3 passes it: its channels as the batch
    with torch.no_grad():
        theirs, mine = vae.encode(x).latent_dist, ours.encode(x).latent_dist
        assert type(mine).__mro__[1] is type(theirs)  # diffusers' posterior class, with its mean and logs
        assert ours.latent_shape(x.shape) == tuple(theirs.mean.shape)
        assert_close(mine.mean, theirs.mean, FP32, f"encode mean, {samples} samples")
        assert_close(mine.logs, theirs.logs, FP32, f"encode logs, {samples} samples")
        assert_close(mine.mode(), theirs.mode(), FP32, "posterior mode")
        expected = vae.decode(theirs.mean).sample
        assert_close(ours.decode(theirs.mean).sample, expected, FP32, f"decode, {samples} samples")
        assert_close(ours(x).sample, vae(x).sample, FP32, "forward")


def test_interface_as_diffusers_class(pair):
    vae, ours = pair
    assert type(ours).__name__ == "MiniMaxH3AudioVAE" and isinstance(ours, type(vae))
    assert ours.hop_length == vae.hop_length == 4
    for name in ("enable_slicing", "enable_tiling", "disable_tiling", "use_tiling", "tiled_decode", "use_slicing"):
        assert hasattr(ours, name) == hasattr(vae, name) is False, name
    z = randn(1, 8, 5, seed=3)
    mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, -1, 1)
    assert torch.allclose(ours.unscale_latents(z), z * std + mean)  # MiniMax H3's audio decode step
    with pytest.raises(ValueError, match="channels"):
        ours.encode(randn(1, 2, 32))  # mono: diffusers raises on the same
    with pytest.raises(ValueError, match="3-D"):
        ours.decode(randn(1, 8, 5, 1))


def test_bf16_keeps_every_module_float32(pair, tmp_path):
    """diffusers keeps all of this class's modules in float32 (`_keep_in_fp32_modules`): a bf16 TorchaxVAE computes
    as PyTorch's bf16-loaded model does, which is its fp32 model, and takes bf16 or fp32 inputs as diffusers casts."""
    vae, ours = pair
    ours16 = TorchaxVAE(vae, dtype=torch.bfloat16)
    assert {t.dtype for t in ours16.state_dict().values()} == {torch.float32}
    vae.save_pretrained(tmp_path)
    loaded = type(vae).from_pretrained(tmp_path, torch_dtype=torch.bfloat16)
    assert {p.dtype for p in loaded.parameters()} == {torch.float32}
    x = randn(2, 1, 40, seed=5)
    with torch.no_grad():
        z = vae.encode(x).latent_dist.mean
        assert_close(ours16.encode(x.bfloat16()).latent_dist.mean, loaded.encode(x.bfloat16()).latent_dist.mean,
                     FP32, "bf16 input encode")
        assert_close(ours16.decode(z).sample, vae.decode(z).sample, FP32, "decode")
        again = TorchaxVAE.from_pretrained(str(tmp_path), subfolder=None)
        assert torch.equal(again.decode(z).sample, ours.decode(z).sample)

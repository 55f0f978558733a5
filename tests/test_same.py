"""AutoencoderSAME (Stable Audio 3's VAE) through TorchaxVAE against the same model in plain PyTorch, and its
pipeline's stage 3 in `torchax-vae decode -o NAME.wav`."""

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, max_abs_diff, needs, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("same-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("same-tiny")


@pytest.mark.parametrize("samples", [128, 37, 4])
def test_encode_and_decode_match_pytorch(pair, samples):
    """Any length (padded to whole patches and strides, the padding's latents cropped, as diffusers')."""
    vae, ours = pair
    x = randn(2, 2, samples, seed=samples)
    with torch.no_grad():
        theirs = vae.encode(x).latents
        assert ours.latent_shape(tuple(x.shape)) == tuple(theirs.shape)
        if theirs.shape[-1] > 1:
            assert theirs[0].std(dim=-1).min() > 1e-2  # latents that vary in time: they can tell a wrong encode
        assert_close(ours.encode(x).latents, theirs, FP32, f"encode, {samples} samples")
        assert_close(ours.encode(x, return_dict=False)[0], theirs, FP32, "encode, return_dict=False")
        assert_close(ours.decode(theirs).sample, vae.decode(theirs).sample, FP32, f"decode, {samples} samples")
        assert_close(ours(x).sample, vae(x).sample, FP32, "forward")


def test_interface_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    assert type(ours).__name__ == "SAMEVAE" and isinstance(ours, type(vae))
    assert ours.downsampling_ratio == vae.downsampling_ratio == 16
    for name in ("enable_slicing", "enable_tiling", "use_tiling", "tiled_decode"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    with pytest.raises(ValueError, match="channels"):
        ours.encode(randn(1, 1, 64))
    z = randn(2, 8, 16, seed=4)
    with torch.no_grad():
        reference = vae.decode(z).sample
        theirs = max_abs_diff(random_vae("same-tiny").to(torch.bfloat16).decode(z.bfloat16()).sample, reference)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).decode(z.bfloat16()).sample, reference)
    assert mine <= 2 * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


def test_command_writes_the_pipelines_sound(pair, tmp_path, capsys):
    """StableAudio3Pipeline's output_type="latent" latents -> a WAV: its stage 3 (`vae.decode(latents)`, cropped to
    the requested length and clamped) within one int16 step, the crop as --audio-end."""
    from test_sound_cli import run

    from torchax_vae.stage3 import sound

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 8, 20, seed=7)
    torch.save(z, tmp_path / "latents.pt")
    end = 0.005  # seconds: the pipeline's waveform_length, 220 of the 320 samples
    with torch.no_grad():
        expected = sound.pcm16(vae.decode(z).sample[:, :, :int(end * 44100)].clamp(-1.0, 1.0))[0]
    code, lines = run(capsys, "decode", tmp_path / "latents.pt", "-o", tmp_path / "clip.wav", "--model",
                      tmp_path / "model", "--audio-end", end, "--no-cache")
    assert code == 0, lines
    pcm, rate = sound.read_wav(tmp_path / "clip.wav")
    assert rate == 44100 and pcm.shape == expected.shape == (220, 2)
    assert np.abs(pcm.astype(int) - expected).max() <= 1

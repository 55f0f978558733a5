"""LongCatAudioDiTVae (LongCat's audio VAE) through TorchaxVAE against the same model in plain PyTorch, and its
pipeline's stage 3 in `torchax-vae decode -o NAME.wav` (torchax_vae/stage3/sound_families.py's `VAESound`)."""

import re

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, max_abs_diff, needs, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("longcat-audio-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("longcat-audio-tiny")


@pytest.mark.parametrize("samples", [4, 40, 128])
def test_encode_and_decode_match_pytorch(pair, samples):
    """encode's default draws from the posterior with the call's generator (the same noise as diffusers draws),
    or keeps its mean; decode and forward."""
    vae, ours = pair
    x = randn(2, 1, samples, seed=samples)
    with torch.no_grad():
        for kwargs in ({}, {"sample_posterior": False}):
            theirs = vae.encode(x, generator=torch.Generator().manual_seed(3), **kwargs).latents
            mine = ours.encode(x, generator=torch.Generator().manual_seed(3), **kwargs).latents
            assert mine.dtype == theirs.dtype == torch.float32 and ours.latent_shape(tuple(x.shape)) == theirs.shape
            assert_close(mine, theirs, FP32, f"encode {kwargs}, {samples} samples")
        expected = vae.decode(theirs).sample
        assert expected.std() > 1e-2  # an output that can tell a wrong decode
        assert_close(ours.decode(theirs).sample, expected, FP32, f"decode, {samples} samples")
        assert_close(ours(x).sample, vae(x).sample, FP32, "forward")


def test_interface_as_diffusers_class(pair):
    vae, ours = pair
    assert type(ours).__name__ == "LongCatAudioVAE" and isinstance(ours, type(vae))
    for name in ("enable_tiling", "enable_slicing", "use_tiling", "use_slicing", "tiled_decode"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    for switch in ("enable_tiling", "enable_slicing"):
        with pytest.raises(NotImplementedError, match="doesn't seem to be implemented for LongCatAudioDiTVae"):
            getattr(vae, switch)()
        with pytest.raises(NotImplementedError, match="doesn't seem to be implemented for LongCatAudioDiTVae"):
            getattr(ours, switch)()
    with pytest.raises(ValueError, match=r"has 42 samples .* whole hops of 4 samples"):
        ours.encode(randn(1, 1, 42))
    with pytest.raises(ValueError, match="channels"):
        ours.decode(randn(1, 3, 5))


def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    z = randn(2, 8, 64, seed=4)
    with torch.no_grad():
        reference = vae.decode(z).sample
        theirs = max_abs_diff(random_vae("longcat-audio-tiny").to(torch.bfloat16).decode(z).sample, reference)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).decode(z.bfloat16()).sample, reference)
    assert mine <= 2 * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


def test_command_writes_the_pipelines_sound(pair, tmp_path, capsys):
    """LongCatAudioDiTPipeline's output_type="latent" latents [B, L, C] -> one WAV per clip at 24 kHz: its stage 3
    (`vae.decode(latents.permute(0, 2, 1))`) within one int16 step; latents of another width are one line."""
    from test_sound_cli import run

    from torchax_vae.stage3 import sound

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 30, 8, seed=7)  # [B, L, C], as the pipeline holds them
    torch.save(z, tmp_path / "latents.pt")
    with torch.no_grad():
        expected = sound.pcm16(vae.decode(z.permute(0, 2, 1)).sample)[0]
    code, lines = run(capsys, "decode", tmp_path / "latents.pt", "-o", tmp_path / "clip.wav", "--model",
                      tmp_path / "model", "--no-cache")
    assert code == 0, lines
    pcm, rate = sound.read_wav(tmp_path / "clip.wav")
    assert rate == 24000 and pcm.shape == expected.shape == (120, 2)
    assert np.abs(pcm.astype(int) - expected).max() <= 1
    torch.save(randn(1, 30, 5), tmp_path / "bad.pt")
    code, lines = run(capsys, "decode", tmp_path / "bad.pt", "-o", tmp_path / "bad.wav", "--model",
                      tmp_path / "model", "--no-cache")
    assert code == 2 and re.search(r"\(1, 30, 5\) do not fit this LongCatAudioDiTVae: expected \[B, L, 8\]",
                                   lines[0]), lines

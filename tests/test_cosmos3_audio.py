"""Cosmos3AVAEAudioTokenizer (Cosmos 3's sound tokenizer) through TorchaxVAE against the same model in plain
PyTorch: its encode and decode, and Cosmos3OmniPipeline's own `decode_sound` with it wrapped."""

import types

import pytest
import torch
from helpers import TOLERANCE, assert_close, max_abs_diff, needs, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("cosmos3-audio-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("cosmos3-audio-tiny")


@pytest.mark.parametrize("length", [1, 9, 30])
def test_decode_and_the_pipelines_decode_sound_match_pytorch(pair, length):
    from diffusers.pipelines.cosmos.pipeline_cosmos3_omni import Cosmos3OmniPipeline

    vae, ours = pair
    z = randn(2, 4, length, seed=length)
    with torch.no_grad():
        expected = vae.decode(z)
        assert expected.shape == (2, 2, 8 * length) and expected.std() > 1e-2
        assert_close(ours.decode(z), expected, FP32, f"decode, {length} latents")
        assert_close(ours.decode(z[0]), vae.decode(z[0]), FP32, "decode of one [C, T]")
        # the pipeline's own stage 3 of its sound: a [C, T] latent, its batch added and removed
        sound = Cosmos3OmniPipeline.decode_sound(types.SimpleNamespace(sound_tokenizer=ours), z[1])
        assert_close(sound, Cosmos3OmniPipeline.decode_sound(types.SimpleNamespace(sound_tokenizer=vae), z[1]), FP32,
                     "Cosmos3OmniPipeline.decode_sound")


def test_odd_strides_and_interface(pair):
    """Odd decoder strides (the released (2, 4, 5, 6, 8) has two) pad their output: the decoded length is s per
    frame whatever the stride. A tokenizer loaded without its encoder refuses encode in diffusers' words."""
    from diffusers import Cosmos3AVAEAudioTokenizer

    torch.manual_seed(0)
    odd = Cosmos3AVAEAudioTokenizer(vocoder_input_dim=4, dec_dim=4, dec_c_mults=(1, 2, 2), dec_strides=(2, 3, 5),
                                    encoder_enabled=False).eval()
    ours_odd = TorchaxVAE(odd)
    z = randn(1, 4, 7, seed=2)
    with torch.no_grad():
        expected = odd.decode(z)
        assert expected.shape[-1] == ours_odd._family.decoded_samples(7) == 210
        assert_close(ours_odd.decode(z), expected, FP32, "odd strides")
    vae, ours = pair
    assert type(ours).__name__ == "Cosmos3AudioVAE" and isinstance(ours, type(vae)) and ours._hop_size == 8
    for name in ("enable_slicing", "tiled_decode", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    with pytest.raises(ValueError, match="decoder-only weights and cannot encode audio"):
        ours_odd.encode(randn(1, 2, 64))
    with pytest.raises(ValueError, match="decoder-only weights and cannot encode audio"):
        odd.encode(randn(1, 2, 64))
    with pytest.raises(ValueError, match=r"must have shape \[B, C, T\]"):
        ours.encode(randn(2, 64))
    with pytest.raises(ValueError, match="1 channels .* expects 2"):
        ours.encode(randn(1, 1, 64))
    with pytest.raises(ValueError, match="3 channels .* expects 4"):
        ours.decode(randn(1, 3, 5))


@pytest.mark.parametrize("samples", [7, 64, 100])
def test_encode_and_forward_match_pytorch(pair, samples):
    """encode: the batch-wide peak normalization, the padding to whole hops (7 and 100 samples are not), the STFT
    spectrogram and the ConvNeXt encoder in one program, within 1e-4 of diffusers'; forward encodes and decodes."""
    vae, ours = pair
    audio = randn(2, 2, samples, seed=samples) * 0.3  # the peak normalization rescales it anyway
    with torch.no_grad():
        expected = vae.encode(audio).latent_dist
        assert expected.mean.std() > 1e-3  # an encode that can tell a wrong front end
        mine = ours.encode(audio).latent_dist
        assert type(mine) is type(expected)
        assert_close(mine.mean, expected.mean, FP32, f"encode of {samples} samples: mean")
        assert_close(mine.scale, expected.scale, FP32, f"encode of {samples} samples: scale")
        assert_close(ours(audio, return_dict=False)[0], vae(audio).sample, FP32, "forward, the mode")
        drawn = ours(audio, sample_posterior=True, generator=torch.Generator().manual_seed(1)).sample
        theirs = vae(audio, sample_posterior=True, generator=torch.Generator().manual_seed(1)).sample
        assert_close(drawn, theirs, FP32, "forward, a draw from the posterior")


def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    z = randn(2, 4, 32, seed=4)
    with torch.no_grad():
        reference = vae.decode(z)
        theirs = max_abs_diff(random_vae("cosmos3-audio-tiny").to(torch.bfloat16).decode(z.bfloat16()), reference)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).decode(z.bfloat16()), reference)
    assert mine <= 2 * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    audio = randn(2, 2, 256, seed=5) * 0.3
    with torch.no_grad():
        expected = vae.encode(audio).latent_dist.mean
        theirs = max_abs_diff(random_vae("cosmos3-audio-tiny").to(torch.bfloat16).encode(audio).latent_dist.mean,
                              expected)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).encode(audio).latent_dist.mean, expected)
    assert mine <= 2 * theirs, f"bf16 encode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "sound_tokenizer")
    plain = type(vae).from_pretrained(tmp_path / "sound_tokenizer")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))

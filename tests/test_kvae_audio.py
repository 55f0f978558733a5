"""diffusers' AutoencoderKLKVAEAudio (Kandinsky's audio VAE, KVAE-Audio) on JAX against the same model in PyTorch:
encode, decode, forward's crop, slicing, bf16, the mesh and the service (models/kvae_audio.py); the command's
`encode clip.wav` and `decode -o clip.wav`: tests/test_sound_encode.py."""

import io

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, max_abs_diff, needs, pair_fixture, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("kvae-audio-tiny")

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("kvae-audio-tiny")


@torch.no_grad()
@pytest.mark.parametrize("samples", [8, 37, 200])
def test_encode_decode_and_forward_match_pytorch(pair, samples):
    """Encode pads to whole hops (37 samples: 5 latents of 8), decode gives latents x 8 samples, forward crops."""
    vae, ours = pair
    x = randn(2, 1, samples, seed=samples)
    expected, mine = vae.encode(x).latent_dist, ours.encode(x).latent_dist
    assert mine.mean.shape == expected.mean.shape == ours.latent_shape(tuple(x.shape))
    for stat in ("mean", "logvar"):
        assert_close(getattr(mine, stat), getattr(expected, stat), FP32, f"encode's {stat}, {samples} samples")
    decoded = vae.decode(expected.mean).sample
    assert decoded.std() > 1e-2 and decoded.shape[-1] == ours._family.decoded_samples(expected.mean.shape[-1])
    assert_close(ours.decode(expected.mean).sample, decoded, FP32, f"decode, {samples} samples")
    for posterior in (False, True):
        theirs = vae(x, sample_posterior=posterior, generator=torch.Generator().manual_seed(1)).sample
        assert_close(ours(x, sample_posterior=posterior, generator=torch.Generator().manual_seed(1)).sample, theirs,
                     FP32, f"forward {posterior}")


def test_interface_slicing_bf16_and_saving(pair, tmp_path):
    from diffusers import AutoencoderKLKVAEAudio

    vae, ours = pair
    assert type(ours).__name__ == "KVAEAudioVAE" and isinstance(ours, AutoencoderKLKVAEAudio)
    assert ours.hop_length == vae.hop_length == 8
    for name in ("enable_slicing", "enable_tiling", "tiled_encode", "tiled_decode", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    with pytest.raises(NotImplementedError, match="Tiling doesn't seem to be implemented for AutoencoderKLKVAEAudio"):
        ours.enable_tiling()
    with pytest.raises(ValueError, match="2 channels .* expects 1"):
        ours.encode(randn(1, 2, 64))
    with pytest.raises(ValueError, match="3 channels .* expects 4"):
        ours.decode(randn(1, 3, 5))
    sliced = TorchaxVAE(vae)
    sliced.enable_slicing()
    x = randn(3, 1, 64, seed=2)
    with torch.no_grad():
        assert_close(sliced.encode(x).latent_dist.mean, vae.encode(x).latent_dist.mean, FP32, "sliced encode")
        z = vae.encode(x).latent_dist.mean
        reference = vae.decode(z).sample
        theirs = max_abs_diff(random_vae("kvae-audio-tiny").to(torch.bfloat16).decode(z.bfloat16()).sample, reference)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).decode(z.bfloat16()).sample, reference)
    assert mine <= 2 * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "vae")
    plain = AutoencoderKLKVAEAudio.from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


@pytest.mark.slow  # (the default suite's time: CI's slow set runs it)
def test_service_answers_its_sound(pair, tmp_path):
    """Served from its folder: latents answer the WAV of their decode at 48 kHz (within one int16 step); an encode
    is a JSON 400 (the service encodes images and videos)."""
    import requests
    from serving import serving

    from torchax_vae.stage3 import sound
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import decode_with_sound

    vae, _ = pair
    vae.save_pretrained(tmp_path / "model" / "vae")
    z = randn(1, 4, 6, seed=3)
    with torch.no_grad():
        expected = sound.pcm16(vae.decode(z).sample)[0]
    with serving(create_app({"kvae-audio": str(tmp_path / "model")})) as url:
        wav = decode_with_sound(f"{url}/decode/kvae-audio", audio=z)
        encode = requests.post(f"{url}/encode/kvae-audio", params={"shape": [1, 1, 64], "dtype": "float32"},
                               data=randn(1, 1, 64).numpy().tobytes())
    assert encode.status_code == 400 and "is served for its sound" in encode.json()["error"], encode.text
    pcm, rate = sound.read_wav(io.BytesIO(wav))
    assert rate == 48000 and np.abs(pcm.astype(int) - expected).max() <= 1

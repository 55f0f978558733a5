"""Kandinsky 6's sound: MMAudioVAE's decode and MMAudioVocoder through TorchaxVAE against the same models in plain
PyTorch, and the pipeline's stage 3 with sound (HunyuanVideo's video VAE, then the audio VAE and vocoder) in
`torchax-vae decode` and the service (torchax_vae/stage3/sound.py)."""

import re

import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, deltas_on_8_devices, max_abs_diff, needs, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("mmaudio-tiny")

FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module")
def pair():
    vae, vocoder = random_vae("mmaudio-tiny"), random_vae("mmaudio-vocoder-tiny")
    return vae, vocoder, TorchaxVAE(vae), TorchaxVAE(vocoder)


@pytest.mark.parametrize("length", [1, 9, 20])
def test_decode_and_vocoder_match_pytorch(pair, length):
    vae, vocoder, ours, ours_vocoder = pair
    z = randn(2, 4, length, seed=length)
    with torch.no_grad():
        mel = vae.decode(z).sample
        assert mel.std() > 1e-2  # an output that can tell a wrong decode
        assert_close(ours.decode(z).sample, mel, FP32, f"MMAudioVAE decode, {length} latents")
        assert_close(ours.decode(z, return_dict=False)[0], mel, FP32, "decode, return_dict=False")
        waveform = vocoder(mel, return_dict=False)[0]
        assert waveform.shape == (2, 1, 2 * length * 16) and waveform.std() > 1e-3
        assert_close(ours_vocoder(mel, return_dict=False)[0], waveform, FP32, "MMAudioVocoder")
        assert_close(ours_vocoder(mel).sample, waveform, FP32, "MMAudioVocoder, return_dict")


@pytest.mark.parametrize("samples", [32, 100, 1000])
def test_encode_and_forward_match_pytorch(pair, samples):
    """MMAudioVAE.encode: the STFT log-mel front end and the encoder in one program, the posterior's parameters
    within 1e-4 of diffusers' (the shortest waveform its reflect padding takes too); forward encodes and decodes."""
    vae, _, ours, _ = pair
    audio = (randn(2, samples, seed=samples) * 0.5).clamp(-1, 1)
    with torch.no_grad():
        expected = vae.encode(audio).latent_dist
        assert expected.mean.std() > 1e-3  # an encode that can tell a wrong front end
        mine = ours.encode(audio).latent_dist
        assert_close(mine.parameters, expected.parameters, FP32, f"MMAudioVAE encode of {samples} samples")
        assert type(mine) is type(expected)
        generator = torch.Generator().manual_seed(1)
        drawn = ours(audio, sample_posterior=True, generator=generator).sample
        theirs = vae(audio, sample_posterior=True, generator=torch.Generator().manual_seed(1)).sample
        assert_close(drawn, theirs, FP32, "MMAudioVAE forward, a draw from the posterior")
        assert_close(ours(audio, return_dict=False)[0], vae(audio).sample, FP32, "MMAudioVAE forward, the mode")


def test_interface_as_diffusers_classes(pair):
    vae, vocoder, ours, ours_vocoder = pair
    assert type(ours).__name__ == "MMAudioVAEModel" and isinstance(ours, type(vae))
    assert isinstance(ours_vocoder, type(vocoder)) and ours.latent_hop_length == vae.latent_hop_length == 32
    for name in ("enable_slicing", "enable_tiling", "tiled_decode", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vae, name), name
        assert hasattr(ours_vocoder, name) == hasattr(vocoder, name), name
    with pytest.raises(ValueError, match="mono waveforms \\[B, samples\\]"):
        ours.encode(randn(1, 1, 256))
    with pytest.raises(ValueError, match="31 samples .* at least 32"):  # diffusers' encoder fails on 31
        ours.encode(randn(1, 31))
    with pytest.raises(ValueError, match="3 channels .* expects 4"):
        ours.decode(randn(1, 3, 5))
    with pytest.raises(ValueError, match="3-D"):
        ours_vocoder(randn(1, 16, 5, 1))
    with pytest.raises(ValueError, match="8 channels .* expects 16"):
        ours_vocoder(randn(1, 8, 5))


def test_bf16_and_saving(pair, tmp_path):
    vae, vocoder, ours, _ = pair
    z = randn(2, 4, 16, seed=3)
    with torch.no_grad():
        reference = vae.decode(z).sample
        theirs = max_abs_diff(random_vae("mmaudio-tiny").to(torch.bfloat16).decode(z.bfloat16()).sample, reference)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).decode(z.bfloat16()).sample, reference)
    assert mine <= 2 * theirs, f"bf16 decode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    mel = reference
    with torch.no_grad():
        expected = vocoder(mel).sample
        theirs = max_abs_diff(random_vae("mmaudio-vocoder-tiny").to(torch.bfloat16)(mel.bfloat16()).sample, expected)
        mine = max_abs_diff(TorchaxVAE(vocoder, dtype=torch.bfloat16)(mel.bfloat16()).sample, expected)
    assert mine <= 2 * theirs, f"bf16 vocoder: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    # PyTorch's STFT takes no bf16 (on CPU "MKL FFT doesn't support tensors of type: BFloat16"; nor cuFFT), so
    # diffusers' bf16 encode cannot run: its bf16 reference is the fp32 front end, then the bf16 encoder
    audio = (randn(2, 500, seed=4) * 0.5).clamp(-1, 1)
    with torch.no_grad():
        expected = vae.encode(audio).latent_dist.mean
        half = random_vae("mmaudio-tiny").to(torch.bfloat16)
        with pytest.raises(RuntimeError, match="BFloat16"):
            half.encode(audio.bfloat16())
        mel = (vae.mel_converter(audio) - vae.vae.data_mean) / vae.vae.data_std
        theirs = max_abs_diff(half.vae.encoder(mel.bfloat16()).chunk(2, dim=1)[0], expected)
        mine = max_abs_diff(TorchaxVAE(vae, dtype=torch.bfloat16).encode(audio.bfloat16()).latent_dist.mean, expected)
    assert mine <= 2 * theirs, f"bf16 encode: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "audio_vae")
    plain = type(vae).from_pretrained(tmp_path / "audio_vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))


MESH_SCRIPT = """
import json, torch
from helpers import random_vae
from torchax_vae import TorchaxVAE, make_mesh
vae, vocoder = random_vae("mmaudio-tiny"), random_vae("mmaudio-vocoder-tiny")
mesh = make_mesh()
ours, ours_vocoder = TorchaxVAE(vae, mesh=mesh), TorchaxVAE(vocoder, mesh=mesh)
z = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(9))
with torch.no_grad():
    mel = vae.decode(z).sample
    rows = {"devices": ours.mesh.devices.size,
            "decode": (ours.decode(z).sample - mel).abs().max().item(),
            "vocoder": (ours_vocoder(mel).sample - vocoder(mel).sample).abs().max().item()}
    audio = torch.rand(2, 500, generator=torch.Generator().manual_seed(10)) * 2 - 1
    rows["encode"] = (ours.encode(audio).latent_dist.parameters
                      - vae.encode(audio).latent_dist.parameters).abs().max().item()
print(json.dumps(rows))
"""


@pytest.mark.slow  # a second process on 8 virtual devices
@pytest.mark.rotate  # beyond the contract's mesh check (tests/contract): in CI a slice of these at a time
def test_on_8_devices_matches_pytorch():
    deltas_on_8_devices(MESH_SCRIPT, FP32)


@pytest.fixture(scope="module")
def kandinsky6(tmp_path_factory, pair):
    """A Kandinsky 6 pipeline folder's VAEs (vae/: HunyuanVideo's, audio_vae/, vocoder/), its output_type="latent"
    pair saved, and the pipeline's own audio stage 3 in PyTorch ([B, samples], channel 0 of the vocoder's)."""
    vae, vocoder, _, _ = pair
    root = tmp_path_factory.mktemp("kandinsky6")
    random_vae("hunyuan-tiny").save_pretrained(root / "vae")
    vae.save_pretrained(root / "audio_vae")
    vocoder.save_pretrained(root / "vocoder")
    video, audio = randn(1, 4, 2, 4, 4, seed=5), randn(1, 4, 12, seed=6)
    torch.save((video, audio), root / "pair.pt")
    with torch.no_grad():  # Kandinsky6TI2VAPipeline's lines, as they are
        mel = vae.decode(audio.to(vae.dtype) / vae.config.scaling_factor, return_dict=False)[0]
        waveform = vocoder(mel.to(vocoder.dtype), return_dict=False)[0][:, 0].float()
    return root, video, audio, waveform


@pytest.mark.slow  # 13 s: the command's and the service's processes (CI: every sixth run)
def test_command_and_service_write_the_pipelines_sound(kandinsky6, tmp_path, capsys):
    """The MP4's sound and the WAV are the pipeline's waveform (mono, written as stereo) within one int16 step;
    served, the same; audio latents of another channel count are one line (a JSON 400)."""
    from serving import serving
    from test_sound_cli import audio_track, run

    from torchax_vae.stage3 import sound
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import StreamError, decode_with_sound

    root, video, audio, waveform = kandinsky6
    code, lines = run(capsys, "decode", root / "pair.pt", "-o", tmp_path / "clip.mp4", "--model", root,
                      "--audio-out", tmp_path / "clip.wav", "--fps", 24, "--no-cache")
    assert code == 0, lines
    expected = sound.pcm16(waveform[:, None])[0]  # mono written as stereo, as diffusers' encode_video
    pcm, rate = sound.read_wav(tmp_path / "clip.wav")
    assert rate == 16000 and pcm.shape == expected.shape and np.abs(pcm.astype(int) - expected).max() <= 1
    assert len(audio_track(tmp_path / "clip.mp4")) >= len(expected)
    torch.save((video, randn(1, 3, 12)), tmp_path / "bad.pt")
    code, lines = run(capsys, "decode", tmp_path / "bad.pt", "-o", tmp_path / "bad.mp4", "--model", root, "--no-cache")
    assert code == 2 and re.search(r"audio latents \(1, 3, 12\) do not fit this MMAudioVAE: expected \[B, 4, L\]",
                                   lines[0]), lines
    with serving(create_app({"kandinsky6": str(root)})) as url:
        wav = decode_with_sound(f"{url}/decode/kandinsky6", audio=audio)
        with pytest.raises(StreamError, match=r"^400: .*\(1, 3, 12\) do not fit"):
            decode_with_sound(f"{url}/decode/kandinsky6", video, randn(1, 3, 12), fps=24)
    import io

    pcm, _ = sound.read_wav(io.BytesIO(wav))
    assert np.abs(pcm.astype(int) - expected).max() <= 1

"""`torchax-vae encode clip.wav` for the audio pipelines' VAEs (torchax_vae/cli/sound_encode.py): the latents against
diffusers' encode of the same samples, channels matched as StableAudioPipeline matches them, ffmpeg's resampling,
the round trip through `decode -o NAME.wav`, and bad input refused in one line before anything compiles."""

import re
import subprocess
import wave

import imageio_ffmpeg
import numpy as np
import pytest
import torch
from helpers import TOLERANCE, assert_close, needs, random_vae
from test_sound_cli import run

from torchax_vae.engine import programs
from torchax_vae.stage3 import sound

FP32 = TOLERANCE[torch.float32]

# config -> (sample rate, channels, samples the test's clip holds: whole hops of each class)
CASES = {"oobleck-tiny": (44100, 2, 200), "same-tiny": (44100, 2, 192), "longcat-audio-tiny": (24000, 1, 152),
         "kvae-audio-tiny": (48000, 1, 200)}


@pytest.fixture(scope="module", params=[pytest.param(config, marks=needs(config)) for config in CASES])
def folder(request, tmp_path_factory):
    """(config, a pipeline folder holding the config's VAE in vae/ with seeded random weights, the VAE)."""
    config = request.param
    vae = random_vae(config)
    root = tmp_path_factory.mktemp(config)
    vae.save_pretrained(root / "vae")
    return config, root, vae


def pcm_of(channels: int, samples: int, seed: int) -> np.ndarray:
    """Seeded 16-bit samples [samples, channels] within 0.9 of full scale."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.9, 0.9, (samples, channels)) * 32767).astype(np.int16)


def expected_latents(vae, waveform: torch.Tensor, generator=None) -> torch.Tensor:
    """diffusers' encode of `waveform` [1, C, samples]: the posterior's mean (or a draw), in the pipeline's layout."""
    longcat = type(vae).__name__ == "LongCatAudioDiTVae"
    with torch.no_grad():
        out = vae.encode(waveform, sample_posterior=generator is not None, generator=generator) if longcat else \
            vae.encode(waveform)
    if hasattr(out, "latent_dist"):
        z = out.latent_dist.mode() if generator is None else out.latent_dist.sample(generator=generator)
    else:
        z = out.latents
    return z.transpose(1, 2) if longcat else z


def test_latents_are_diffusers_encode_of_the_files_samples(folder, tmp_path, capsys):
    config, root, vae = folder
    rate, channels, samples = CASES[config]
    pcm = pcm_of(channels, samples, seed=3)
    sound.write_wav(tmp_path / "clip.wav", pcm, rate)
    code, lines = run(capsys, "encode", tmp_path / "clip.wav", "-o", tmp_path / "z.safetensors", "--model", root,
                      "--no-cache")
    assert code == 0, lines
    assert re.search(rf"latents \[1, .*\) from {samples / rate:.2f} s of sound at {rate} Hz; compile", lines[-1]), lines
    from safetensors.torch import load_file

    ours = load_file(tmp_path / "z.safetensors")["latents"]
    waveform = torch.from_numpy(pcm.T.astype(np.float32) / 32768.0)[None]  # as soundfile and torchaudio read it
    assert_close(ours, expected_latents(vae, waveform), FP32, f"{config}: the file's latents")
    # the round trip: `decode` takes them back to a WAV of the same length
    code, lines = run(capsys, "decode", tmp_path / "z.safetensors", "-o", tmp_path / "back.wav", "--model", root,
                      "--no-cache")
    assert code == 0, lines
    back, back_rate = sound.read_wav(tmp_path / "back.wav")
    assert back_rate == rate and back.shape[0] == samples, (back.shape, back_rate)


def test_channels_resampling_and_a_draw(folder, tmp_path, capsys):
    """Mono repeated to stereo and stereo averaged to mono (StableAudioPipeline's rule); a file at another rate
    resampled by ffmpeg, and said so; `--posterior sample --seed` is diffusers' draw with that seed."""
    config, root, vae = folder
    rate, channels, samples = CASES[config]
    other = 2 if channels == 1 else 1
    pcm = pcm_of(other, samples, seed=4)
    _wav(tmp_path / "other.wav", pcm, rate)
    code, lines = run(capsys, "encode", tmp_path / "other.wav", "-o", tmp_path / "z.pt", "--model", root,
                      "--posterior", "sample", "--seed", 5, "--no-cache")
    assert code == 0, lines
    waveform = torch.from_numpy(pcm.T.astype(np.float32) / 32768.0)[None]
    waveform = waveform.repeat(1, 2, 1) if channels == 2 else waveform.mean(1, keepdim=True)
    draw = torch.Generator().manual_seed(5)  # (AutoencoderSAME has no posterior: its latents are the same)
    assert_close(torch.load(tmp_path / "z.pt"), expected_latents(vae, waveform, draw), FP32, f"{config}: matched")
    # half the model's rate: ffmpeg resamples, and the latents are diffusers' encode of what ffmpeg made
    _wav(tmp_path / "half.wav", pcm_of(channels, samples // 2, seed=6), rate // 2)
    code, lines = run(capsys, "encode", tmp_path / "half.wav", "-o", tmp_path / "h.npy", "--model", root, "--no-cache")
    assert code == 0, lines
    assert f"resampled by ffmpeg from {rate // 2} Hz" in lines[-1], lines
    resampled = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "half.wav"),
                                "-f", "s32le", "-c:a", "pcm_s32le", "-ar", str(rate), "-"], capture_output=True,
                               check=True).stdout
    waveform = torch.from_numpy(np.frombuffer(resampled, "<i4").reshape(-1, channels).T / 2.0**31).float()[None]
    assert waveform.shape[2] == samples, waveform.shape
    assert_close(torch.from_numpy(np.load(tmp_path / "h.npy")), expected_latents(vae, waveform), FP32,
                 f"{config}: resampled")


def _wav(path, pcm: np.ndarray, rate: int) -> None:
    with wave.open(str(path), "wb") as f:
        f.setnchannels(pcm.shape[1])
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(pcm.astype("<i2").tobytes())


@needs("longcat-audio-tiny")
def test_bad_sound_input_is_one_line_before_anything_compiles(tmp_path, capsys):
    random_vae("oobleck-tiny").save_pretrained(tmp_path / "oobleck" / "vae")
    random_vae("longcat-audio-tiny").save_pretrained(tmp_path / "longcat" / "vae")
    random_vae("wan-tiny").save_pretrained(tmp_path / "wan" / "vae")
    _wav(tmp_path / "three.wav", pcm_of(3, 64, seed=1), 44100)
    _wav(tmp_path / "short.wav", pcm_of(2, 3, seed=1), 44100)
    _wav(tmp_path / "odd.wav", pcm_of(1, 63, seed=1), 24000)
    _wav(tmp_path / "fine.wav", pcm_of(2, 64, seed=1), 44100)
    (tmp_path / "noise.wav").write_bytes(b"not a sound file at all" * 10)
    from torchax_vae.media import files

    with files.frame_writer(tmp_path / "silent.mp4", shape=(5, 32, 32, 3), fps=24) as write:
        write(np.zeros((5, 32, 32, 3), np.uint8))
    original = programs.Programs.run

    def compiled(*args, **kwargs):
        raise AssertionError("compiled before refusing")

    programs.Programs.run = compiled
    try:
        cases = [
            ("three.wav", "oobleck", r"three\.wav has 3 channels; this VAE encodes 2"),
            ("short.wav", "oobleck", r"has 3 samples .*AutoencoderOobleck encodes at least \d+"),
            ("odd.wav", "longcat", r"has 63 samples .*LongCatAudioDiTVae encodes whole"),
            ("noise.wav", "oobleck", r"cannot read sound from .*noise\.wav: .*expected a sound file ffmpeg reads"),
            ("silent.mp4", "oobleck", r"silent\.mp4 has no sound track \(expected a sound file, or a video with sound\)"),
            ("fine.wav", "wan", r"fine\.wav is a sound file, and a AutoencoderKLWan encodes video or images; the VAEs "
                                r"that encode sound files: AutoencoderOobleck \(Stable Audio\)"),
        ]
        for name, model, message in cases:
            code, lines = run(capsys, "encode", tmp_path / name, "-o", tmp_path / "z.pt", "--model", tmp_path / model,
                              "--no-cache")
            assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), (name, lines)
        for model, extra, message in (("longcat", ["--tiling"], r"--tiling: Tiling doesn't seem to be implemented"),
                                      ("oobleck", ["--layout", "BCFHW"], r"--layout is for videos; .*fine\.wav is "
                                                                         r"encoded as sound")):
            code, lines = run(capsys, "encode", tmp_path / "fine.wav", "-o", tmp_path / "z.pt", "--model",
                              tmp_path / model, *extra, "--no-cache")
            assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), (extra, lines)
    finally:
        programs.Programs.run = original
    assert not (tmp_path / "z.pt").exists()


def test_a_videos_sound_track(tmp_path, capsys):
    """A video with sound given to an audio pipeline's VAE: its sound track is encoded (what ffmpeg decodes of it,
    within 1e-4 of diffusers' encode of that)."""
    from torchax_vae.media import files

    vae = random_vae("oobleck-tiny")
    vae.save_pretrained(tmp_path / "model" / "vae")
    sound.write_wav(tmp_path / "track.wav", pcm_of(2, 2000, seed=8), 44100)
    with files.frame_writer(tmp_path / "clip.mp4", shape=(5, 32, 32, 3), fps=24, audio=tmp_path / "track.wav") as write:
        write(np.zeros((5, 32, 32, 3), np.uint8))
    code, lines = run(capsys, "encode", tmp_path / "clip.mp4", "-o", tmp_path / "z.pt", "--model", tmp_path / "model",
                      "--no-cache")
    assert code == 0, lines
    track = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "clip.mp4"), "-map",
                            "0:a:0", "-f", "s32le", "-c:a", "pcm_s32le", "-"], capture_output=True, check=True).stdout
    waveform = torch.from_numpy(np.frombuffer(track, "<i4").reshape(-1, 2).T / 2.0**31).float()[None]
    assert waveform.shape[2] >= 2000 and waveform.abs().max() > 0.1
    assert_close(torch.load(tmp_path / "z.pt"), expected_latents(vae, waveform), FP32, "the MP4's sound track")

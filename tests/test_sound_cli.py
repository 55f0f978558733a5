"""`torchax-vae decode` with sound (LTX-2): the MP4's AAC track and the WAV against PyTorch's audio VAE + vocoder,
and bad input refused in one line before anything compiles (torchax_vae/stage3/sound.py)."""

import re
import subprocess

import imageio_ffmpeg
import numpy as np
import pytest
import torch

import test_ltx2_audio as audio_models
from helpers import needs, random_vae
from torchax_vae.media import files
from torchax_vae.stage3 import sound
from torchax_vae.cli import main as cli_main

pytestmark = needs("ltx2-tiny")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """An LTX-2 pipeline folder's VAEs (vae/, audio_vae/, vocoder/: small, seeded random weights), its stage 2
    output saved as `torch.save((video, audio))`, and PyTorch's waveform of that audio."""
    root = tmp_path_factory.mktemp("ltx2")
    video, audio, waveform = audio_models.ltx2_folder(root)
    torch.save((video, audio), root / "pair.pt")
    torch.save(video, root / "video.pt")
    torch.save(audio, root / "audio.pt")
    return root, waveform


def run(capsys, *args) -> tuple[int, list[str]]:
    """cli.main in this process: (exit status, the stderr lines naming the command and then its stdout's)."""
    code = cli_main([*map(str, args)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, [line for line in captured.err.splitlines() if "torchax-vae" in line and " frames written " not in line] \
        + captured.out.splitlines()


def audio_track(path) -> np.ndarray:  # (test_serve_sound.py's too)
    """The MP4's sound decoded by ffmpeg: int16 [samples, 2]."""
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(path), "-map", "0:a:0", "-f",
                           "s16le", "-acodec", "pcm_s16le", "-"], capture_output=True, check=True)
    return np.frombuffer(proc.stdout, dtype="<i2").reshape(-1, 2)


def test_the_mp4s_sound_is_pytorchs_waveform_written_the_same_way(pipeline, tmp_path, capsys):
    root, waveform = pipeline
    code, lines = run(capsys, "decode", root / "pair.pt", "-o", tmp_path / "clip.mp4", "--model", root,
                      "--audio-out", tmp_path / "sound.wav", "--fps", 24, "--no-cache")
    assert code == 0, lines
    expected = sound.pcm16(waveform)  # as diffusers' encode_video makes them
    for i in range(2):
        pcm, rate = sound.read_wav(tmp_path / f"sound_{i}.wav")
        assert rate == 16000 and pcm.shape == expected[i].shape
        off = np.abs(pcm.astype(int) - expected[i]).max()
        assert off <= 1, f"WAV {i}: {off} steps of 1/32767 from PyTorch's waveform"  # fp32 rounding at a step's edge
        # the AAC track is those samples (PyTorch's within a step) written by the same writer, bit for bit. Not
        # PyTorch's own samples: AAC is lossy and not continuous in its input (one sample one step off moved the
        # decoded track 453 steps, 2026-12-08, its error against the samples being about 1,200 either way)
        reference = tmp_path / f"reference_{i}.wav"
        sound.write_wav(reference, pcm, 16000)
        with files.frame_writer(tmp_path / f"reference_{i}.mp4", shape=(5, 32, 32, 3), fps=24, audio=reference) as write:
            write(np.zeros((5, 32, 32, 3), np.uint8))
        ours, theirs = audio_track(tmp_path / f"clip_{i}.mp4"), audio_track(tmp_path / f"reference_{i}.mp4")
        assert ours.shape == theirs.shape and len(ours) >= expected.shape[1]
        worst = np.abs(ours.astype(int) - theirs).max()
        assert worst == 0, f"MP4 {i}: the AAC track is {worst} steps from the WAV's samples written the same way"
    assert re.search(r"2 x 9 frames 32x32, with 0\.04 s of sound at 16000 Hz \(also .*sound_0\.wav", lines[-1]), lines


def test_the_sound_alone_from_a_pair_or_a_file_of_its_own(pipeline, tmp_path, capsys):
    root, waveform = pipeline
    expected = sound.pcm16(waveform)
    for source in ("pair.pt", "audio.pt"):
        code, lines = run(capsys, "decode", root / source, "-o", tmp_path / "alone.wav", "--model", root, "--no-cache")
        assert code == 0, lines
        for i in range(2):
            pcm, _ = sound.read_wav(tmp_path / f"alone_{i}.wav")
            assert np.abs(pcm.astype(int) - expected[i]).max() <= 1, source
    # video latents in one file, audio in another
    code, lines = run(capsys, "decode", root / "video.pt", "--audio-latents", root / "audio.pt", "-o",
                      tmp_path / "two.npy", "--audio-out", tmp_path / "two.wav", "--model", root, "--no-cache")
    assert code == 0, lines
    assert np.load(tmp_path / "two_0.npy").shape == (9, 32, 32, 3)
    assert np.abs(sound.read_wav(tmp_path / "two_1.wav")[0].astype(int) - expected[1]).max() <= 1


def test_bad_sound_is_one_line_and_exit_2_before_anything_compiles(pipeline, tmp_path, capsys, monkeypatch):
    root, _ = pipeline
    from torchax_vae.engine import programs

    def compiled(*args, **kwargs):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(programs.Programs, "run", compiled)
    bad = tmp_path / "bad.pt"
    cogvideox = tmp_path / "cogvideox"
    random_vae("tiny").save_pretrained(cogvideox / "vae")
    video = torch.load(root / "video.pt")
    cases = {
        "three channels": ((video, torch.randn(2, 3, 40, 4)), root, [],
                           r"audio latents \(2, 3, 40, 4\) do not fit .*expected \[B, 4, L, 4\]"),
        "mel bins": ((video, torch.randn(2, 4, 40, 16)), root, [], r"expected \[B, 4, L, 4\] \(4 channels, 4 latent mel"),
        "5-D audio": ((video, video), root, [], r"audio latents must be 4-D \[B, C, L, mel_bins\]"),
        "one clip for two": ((video, torch.randn(1, 4, 40, 4)), root, [], r"1 audio latents for 2 videos"),
        "no sound there": ((torch.randn(1, 4, 2, 4, 4), torch.randn(1, 4, 40, 4)), cogvideox, ["--layout", "BCFHW"],
                           r"a AutoencoderKLCogVideoX makes video without sound; the families with sound: LTX-2"),
        "npy without a wav": ((video, torch.randn(2, 4, 40, 4)), root, ["-o", tmp_path / "v.npy"],
                              r"an \.npy holds the frames alone; give --audio-out NAME\.wav"),
        "audio out, no audio": (video, root, ["--audio-out", tmp_path / "s.wav"], r"holds no audio latents"),
        "a wav of nothing": (video[:, :, 0], root, ["-o", tmp_path / "s.wav"], r"do not fit"),
    }
    for name, (data, model, extra, message) in cases.items():
        torch.save(data, bad)
        out = [] if "-o" in extra else ["-o", tmp_path / "out.mp4"]
        code, lines = run(capsys, "decode", bad, *out, "--model", model, *extra, "--no-cache")
        assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), (name, lines)
        assert not list(tmp_path.glob("out*.mp4")) and not list(tmp_path.glob("s*.wav")), name
    # a pipeline folder without its sound
    lacking = tmp_path / "lacking"
    (lacking / "vae").mkdir(parents=True)
    for name in ("config.json", "diffusion_pytorch_model.safetensors"):
        (lacking / "vae" / name).write_bytes((root / "vae" / name).read_bytes())
    code, lines = run(capsys, "decode", root / "pair.pt", "-o", tmp_path / "out.mp4", "--model", lacking, "--no-cache")
    assert code == 2 and re.search(r"has no audio_vae/ or vocoder/: LTX-2.s sound needs a pipeline folder with audio_vae/ and vocoder/", lines[0]), lines

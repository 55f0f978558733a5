"""MiniMax H3's video with sound at stage 3 (torchax_vae/stage3/sound.py): `torchax-vae decode` and the service take the
modular pipeline's `latents` and `audio_latents` (normalized; the audio's two stereo channels as two items) and give
the video and sound of diffusers' own decode blocks (`MiniMaxH3DecodeStep`), in one MP4 or a WAV; bad sound is
refused in one line (a JSON 400) before anything compiles."""

import re

import numpy as np
import pytest
import torch

from helpers import TOLERANCE, assert_close, needs, randn, random_vae
from test_sound_cli import audio_track, run
from torchax_vae.media import files
from torchax_vae.stage3 import sound

pytestmark = needs("minimaxh3-tiny")

RATE = 32000  # the tiny audio VAE's config (hop 4)
FP32 = TOLERANCE[torch.float32]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """A MiniMax H3 pipeline folder's VAEs (vae/, audio_vae/: small, seeded random weights), the modular pipeline's
    latents for one clip (video [1, C, F, H, W], audio [2, C, L], both normalized), saved as a dict as its state
    names them, and plain diffusers' decode blocks' video ([1, F, 3, H, W] in [0, 1]) and sound ([1, 2, samples])."""
    from diffusers.modular_pipelines.minimax_h3.modular_blocks_minimax_h3 import MiniMaxH3DecodeStep

    root = tmp_path_factory.mktemp("minimax")
    vae, audio_vae = random_vae("minimaxh3-tiny"), random_vae("minimaxh3-audio-tiny")
    vae.save_pretrained(root / "vae")
    audio_vae.save_pretrained(root / "audio_vae")
    z, a = randn(1, 4, 7, 2, 3, seed=21), randn(2, 8, 400, seed=22)
    torch.save({"latents": z, "audio_latents": a}, root / "state.pt")
    torch.save((z, a), root / "pair.pt")
    torch.save(a, root / "audio.pt")
    pipe = MiniMaxH3DecodeStep().init_pipeline()
    pipe.update_components(vae=vae, audio_vae=audio_vae)
    out = pipe(latents=z, audio_latents=a, output_type="pt", output=["videos", "audio"])
    assert out["audio"].shape == (1, 2, 1600) and out["audio"].std() > 1e-3
    return root, z, a, out["videos"], out["audio"]


@pytest.mark.slow  # 11 s: the command's processes (CI: every sixth run)
def test_the_mp4_holds_the_pipelines_video_and_sound(pipeline, tmp_path, capsys):
    root, _, _, video, waveform = pipeline
    code, lines = run(capsys, "decode", root / "state.pt", "-o", tmp_path / "clip.mp4", "--model", root,
                      "--audio-out", tmp_path / "sound.wav", "--fps", 24, "--no-cache")
    assert code == 0, lines
    expected = sound.pcm16(waveform)[0]  # as diffusers' encode_video makes them
    pcm, rate = sound.read_wav(tmp_path / "sound.wav")
    assert rate == RATE and pcm.shape == expected.shape == (1600, 2)
    off = np.abs(pcm.astype(int) - expected).max()
    assert off <= 1, f"WAV: {off} steps of 1/32767 from diffusers' waveform"
    # the AAC track is those samples (diffusers' within a step) written by the same writer, bit for bit (AAC is not
    # continuous in its input: tests/test_sound_cli.py)
    reference = tmp_path / "reference.wav"
    sound.write_wav(reference, pcm, RATE)
    with files.frame_writer(tmp_path / "reference.mp4", shape=(5, 8, 12, 3), fps=24, audio=reference) as write:
        write(np.zeros((5, 8, 12, 3), np.uint8))
    ours, theirs = audio_track(tmp_path / "clip.mp4"), audio_track(tmp_path / "reference.mp4")
    assert ours.shape == theirs.shape and len(ours) >= 1600
    worst = np.abs(ours.astype(int) - theirs).max()
    assert worst == 0, f"the AAC track is {worst} steps from the WAV's samples written the same way"
    assert re.search(rf"22 frames 8x12, with 0\.05 s of sound at {RATE} Hz", lines[-1]), lines
    # the frames: the npy of the same latents is the pipeline's video within one uint8 step
    code, lines = run(capsys, "decode", root / "pair.pt", "-o", tmp_path / "clip.npy", "--model", root,
                      "--audio-out", tmp_path / "again.wav", "--no-cache")
    assert code == 0, lines
    levels = (video[0] * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    assert np.abs(np.load(tmp_path / "clip.npy").astype(int) - levels).max() <= 1
    assert np.array_equal(sound.read_wav(tmp_path / "again.wav")[0], pcm)


def test_the_sound_alone(pipeline, tmp_path, capsys):
    root, _, _, _, waveform = pipeline
    for source in ("state.pt", "audio.pt"):
        code, lines = run(capsys, "decode", root / source, "-o", tmp_path / "alone.wav", "--model", root, "--no-cache")
        assert code == 0, (source, lines)
        pcm, rate = sound.read_wav(tmp_path / "alone.wav")
        assert rate == RATE and np.abs(pcm.astype(int) - sound.pcm16(waveform)[0]).max() <= 1, source


def test_bad_sound_is_one_line_and_exit_2_before_anything_compiles(pipeline, tmp_path, capsys, monkeypatch):
    root, z, a, _, _ = pipeline
    from torchax_vae.engine import programs

    def compiled(*args, **kwargs):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(programs.Programs, "run", compiled)
    bad = tmp_path / "bad.pt"
    cases = {
        "channels": ((z, randn(2, 5, 40)), r"audio latents \(2, 5, 40\) do not fit .*expected \[2 x clips, 8, L\]"),
        "one channel": ((z, randn(1, 8, 40)), r"\(1, 8, 40\) do not fit .*two stereo channels per clip"),
        "two clips for one": ((z, randn(4, 8, 40)), r"4 audio latents for 1 videos; two each \(a clip's left and right"),
        "4-D audio": ((z, randn(2, 8, 40, 4)), r"audio latents must be 3-D \[2 x clips, C, L\]"),
        "NaN": ((z, torch.full((2, 8, 40), float("nan"))), r"audio latents contain NaN or Inf"),
    }
    for name, (data, message) in cases.items():
        torch.save(data, bad)
        code, lines = run(capsys, "decode", bad, "-o", tmp_path / "out.mp4", "--model", root, "--no-cache")
        assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), (name, lines)
        assert not list(tmp_path.glob("out*.mp4")), name
    lacking = tmp_path / "lacking"
    (lacking / "vae").mkdir(parents=True)
    for name in ("config.json", "diffusion_pytorch_model.safetensors"):
        (lacking / "vae" / name).write_bytes((root / "vae" / name).read_bytes())
    code, lines = run(capsys, "decode", root / "pair.pt", "-o", tmp_path / "out.mp4", "--model", lacking, "--no-cache")
    assert code == 2 and re.search(r"has no audio_vae/: MiniMax H3's sound needs a pipeline folder with audio_vae/",
                                   lines[0]), lines
    code, lines = run(capsys, "decode", root / "audio.pt", "-o", tmp_path / "s.wav", "--model", lacking, "--no-cache")
    assert code == 2 and re.search(r"has no audio_vae/: sound needs a pipeline folder with its audio VAE", lines[0])


def test_the_service_answers_the_commands_sound(pipeline, tmp_path):
    """Served from the pipeline folder: the (video, audio) pair gives an MP4 whose sound is the command's, the
    audio alone the WAV and the waveform of diffusers' decode blocks; a bad shape is a JSON 400."""
    import io

    import requests

    from serving import serving
    from torchax_vae.cli import main as cli_main
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import StreamError, decode_with_sound

    root, z, a, _, waveform = pipeline
    with serving(create_app({"minimax": str(root)})) as url:
        mp4 = decode_with_sound(f"{url}/decode/minimax", z, a, fps=24, do_scaling=False)
        wav = decode_with_sound(f"{url}/decode/minimax", audio=a)
        answer = requests.post(f"{url}/decode/minimax", params={"audio_shape": list(a.shape), "dtype": "float32",
                                                               "output_type": "pt"}, data=a.numpy().tobytes())
        with pytest.raises(StreamError, match=r"^400: .*audio latents \(3, 8, 400\) do not fit"):
            decode_with_sound(f"{url}/decode/minimax", z, torch.cat([a, a[:1]]))
        assert requests.get(f"{url}/health/ready").status_code == 200
    pcm, rate = sound.read_wav(io.BytesIO(wav))
    assert rate == RATE and np.abs(pcm.astype(int) - sound.pcm16(waveform)[0]).max() <= 1
    assert answer.status_code == 200 and answer.headers["sample_rate"] == str(RATE)
    got = torch.frombuffer(bytearray(answer.content), dtype=torch.float32).view(*eval(answer.headers["shape"]))
    assert_close(got, waveform, FP32, "served MiniMax H3 waveform")
    (tmp_path / "served.mp4").write_bytes(mp4)
    assert cli_main(["decode", str(root / "pair.pt"), "-o", str(tmp_path / "command.mp4"), "--model", str(root),
                     "--fps", "24", "--no-cache"]) == 0
    ours, theirs = audio_track(tmp_path / "served.mp4"), audio_track(tmp_path / "command.mp4")
    # a fragmented MP4 keeps the last AAC frame's padding (files.mp4_command): the same sound, then < 1024 samples
    assert len(theirs) > 0 and len(theirs) <= len(ours) < len(theirs) + 1024, (ours.shape, theirs.shape)
    assert np.abs(ours[:len(theirs)].astype(int) - theirs).max() <= 2

"""The service with sound (serve/sounds.py): an LTX-2 pipeline folder served whole decodes a (video, audio) pair
into an MP4 whose AAC track is the command's, and audio latents alone into the WAV or waveform of PyTorch's audio
VAE + vocoder; bad sound requests are JSON 400s that leave the server serving."""

import io

import numpy as np
import pytest
import requests
import torch

import test_ltx2_audio as audio_models
from helpers import TOLERANCE, assert_close, needs, random_vae
from serving import serving
from test_sound_cli import audio_track
from torchax_vae import TorchaxVAE
from torchax_vae.stage3 import sound
from torchax_vae.serve import create_app
from torchax_vae.serve.client import StreamError, decode_with_sound
from torchax_vae.media.video_input import read_video

pytestmark = needs("ltx2-tiny")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("ltx2")
    video, audio, waveform = audio_models.ltx2_folder(root)
    silent = tmp_path_factory.mktemp("ltx2-vae-only")
    (silent / "vae").symlink_to(root / "vae")
    models = {"ltx2": str(root), "ltx2-silent": str(silent), "wan": TorchaxVAE(random_vae("wan-tiny"))}
    with serving(create_app(models)) as url:
        yield url, root, video, audio, waveform


@pytest.mark.slow  # 11 s: the command's and the service's MP4s (CI: every sixth run)
def test_an_mp4_with_sound_is_the_commands(served, tmp_path):
    from torchax_vae.cli import main as cli_main

    url, root, video, audio, _ = served
    mp4 = decode_with_sound(f"{url}/decode/ltx2", video[1:], audio[1:], fps=24, do_scaling=False)
    assert b"moof" in mp4  # fragmented, streamed as the video's chunks are final
    (tmp_path / "served.mp4").write_bytes(mp4)
    torch.save((video[1:], audio[1:]), tmp_path / "pair.pt")
    assert cli_main(["decode", str(tmp_path / "pair.pt"), "-o", str(tmp_path / "command.mp4"), "--model", str(root),
                     "--fps", "24", "--no-cache"]) == 0
    ours, theirs = audio_track(tmp_path / "served.mp4"), audio_track(tmp_path / "command.mp4")
    # a fragmented MP4 keeps the last AAC frame's padding (files.mp4_command): the same sound, then < 1024 samples
    assert len(theirs) > 0 and len(theirs) <= len(ours) < len(theirs) + 1024, (ours.shape, theirs.shape)
    assert np.abs(ours[:len(theirs)].astype(int) - theirs).max() <= 2  # (a step of int16 rounding either side)
    frames, fps = read_video(tmp_path / "served.mp4")
    command = read_video(tmp_path / "command.mp4")[0]
    torch.save(video[1:], tmp_path / "video.pt")  # the exact frames: the command's .npy of the video alone
    assert cli_main(["decode", str(tmp_path / "video.pt"), "-o", str(tmp_path / "frames.npy"), "--model", str(root),
                     "--no-cache"]) == 0
    exact = np.load(tmp_path / "frames.npy")
    assert fps == 24 and frames.shape == command.shape == exact.shape
    # both lossy (CRF 12, yuv420p's halved colour: 22 levels on average on these random-weight frames); the
    # stream's keyframes and x264's zero latency cost no more than two levels more on average
    streamed_error, command_error = (np.abs(v.astype(int) - exact).mean() for v in (frames, command))
    assert streamed_error <= command_error + 2, (streamed_error, command_error)


def test_the_sound_alone_is_pytorchs(served):
    url, _, _, audio, waveform = served
    wav = decode_with_sound(f"{url}/decode/ltx2", audio=audio[:1])
    pcm, rate = sound.read_wav(io.BytesIO(wav))
    assert rate == 16000 and np.abs(pcm.astype(int) - sound.pcm16(waveform)[0]).max() <= 1
    answer = requests.post(f"{url}/decode/ltx2", params={"audio_shape": list(audio.shape), "dtype": "float32",
                                                         "output_type": "pt"}, data=audio.numpy().tobytes())
    assert answer.status_code == 200 and answer.headers["sample_rate"] == "16000"
    got = torch.frombuffer(bytearray(answer.content), dtype=torch.float32).view(*eval(answer.headers["shape"]))
    assert_close(got, waveform, TOLERANCE[torch.float32], "served waveform")


def test_bad_sound_requests_are_json_400s_and_nothing_else_is_disturbed(served):
    url, _, video, audio, waveform = served
    cases = [
        ("ltx2", video[:1], torch.randn(1, 3, 40, 4), {}, r"the request: audio latents \(1, 3, 40, 4\) do not fit"),
        ("ltx2", video[:1], audio[:2], {}, r"the request: 2 audio latents for 1 videos"),
        ("ltx2", video[:1], audio[:1], {"output_type": "frames"}, r"answer an MP4 with sound: ask for output_type=mp4"),
        ("ltx2", None, audio, {"output_type": "wav"}, r"output_type wav answers one clip; these audio latents hold 2"),
        ("ltx2-silent", None, audio[:1], {}, r"decodes no sound; it is served without it: serve the pipeline folder"),
        ("wan", None, audio[:1], {}, r"\(AutoencoderKLWan\) decodes no sound; the families with sound: LTX-2"),
    ]
    for name, latents, sound_latents, params, message in cases:
        with pytest.raises(StreamError, match="^400: .*" + message):
            decode_with_sound(f"{url}/decode/{name}", latents, sound_latents, **params)
    answer = requests.post(f"{url}/decode/ltx2", params={"audio_shape": [1, 4, 40, 4], "dtype": "float32"},
                           data=b"\0" * 12)
    assert answer.status_code == 400 and "Content-Length is 12 bytes; audio_shape [1, 4, 40, 4] of float32 needs 2560" \
        in answer.json()["error"]
    wav = decode_with_sound(f"{url}/decode/ltx2", audio=audio[:1])  # still serving, as before
    assert np.abs(sound.read_wav(io.BytesIO(wav))[0].astype(int) - sound.pcm16(waveform)[0]).max() <= 1


def test_a_sound_vae_asked_for_pictures_is_told_how_to_ask():
    """A sound VAE's latents sent as `shape=` (a video's) is a JSON 400 naming `audio_shape=`, before anything
    is read or compiled (it was a 500: the pixel cap's check took the sound latents for a video's)."""
    model = TorchaxVAE(random_vae("oobleck-tiny"))
    with serving(create_app({"oobleck": model})) as url:
        shape = (1, model.latent_channels, 10)
        answer = requests.post(f"{url}/decode/oobleck", params={"shape": ",".join(map(str, shape)), "dtype": "float32"},
                               data=b"\0" * (4 * 10 * model.latent_channels))
        assert answer.status_code == 400, answer.text
        assert "send its latents with audio_shape=" in answer.json()["error"]
        assert model.compile_stats() == []

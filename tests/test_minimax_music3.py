"""MiniMaxMusic3Vocoder (MiniMax Music 3's stage 3) through TorchaxVAE against the same model in plain PyTorch, and
its pipeline's decode step (windows vocoded, cropped and joined) in `torchax-vae decode -o NAME.wav` and the service
(torchax_vae/stage3/sound_families.py's `MusicSound`)."""

import io
import re
import threading
import types

import numpy as np
import pytest
import requests
import torch
from helpers import TOLERANCE, assert_close, max_abs_diff, needs, randn, random_vae

from torchax_vae import TorchaxVAE

pytestmark = needs("minimax-music3-vocoder-tiny")

FP32 = TOLERANCE[torch.float32]
HOP = 8  # the tiny vocoder's upsampling (2 x 4): the pipeline's latent_hop_length for it


@pytest.fixture(scope="module")
def pair():
    vocoder = random_vae("minimax-music3-vocoder-tiny")
    return vocoder, TorchaxVAE(vocoder)


def decode_step(vocoder, windows) -> torch.Tensor:
    """diffusers' own MiniMaxMusic3VocoderDecodeStep on `windows` (the pipeline's latent_chunks): the song."""
    from diffusers.modular_pipelines import PipelineState
    from diffusers.modular_pipelines.minimax_music3.decoders import MiniMaxMusic3VocoderDecodeStep

    state = PipelineState()
    state.set("latent_chunks", windows)
    state.set("output_type", "pt")
    components = types.SimpleNamespace(vocoder=vocoder, latent_hop_length=HOP)
    with torch.no_grad():
        _, state = MiniMaxMusic3VocoderDecodeStep()(components, state)
    return state.get("audios")


def windows(lengths=(400, 400, 360), batch=1, seed=0) -> list[torch.Tensor]:
    """A song's windows as the pipeline denoises them (each over 344 latent frames, its overlap)."""
    return [randn(batch, 8, n, seed=seed + i) * 2 for i, n in enumerate(lengths)]


@pytest.mark.parametrize("length", [1, 9, 40])
def test_vocoder_matches_pytorch(pair, length):
    vocoder, ours = pair
    z = randn(2, 8, length, seed=length) * 2
    with torch.no_grad():
        expected = vocoder(z)
        assert expected.shape == (2, 2, length * HOP) and expected.std() > 1e-2  # an output that tells a wrong one
        mine = ours(z)
        assert mine.dtype == torch.float32 and ours._family.decoded_samples(length) == expected.shape[2]
        assert_close(mine, expected, FP32, f"MiniMaxMusic3Vocoder, {length} latent frames")


def test_the_pipelines_windows_make_its_song(pair):
    """The decode step's song (each window vocoded, the overlaps cropped, joined) equals diffusers' step's own;
    one program per window length (two for a song of full windows and a shorter last one)."""
    from torchax_vae.models.minimax_music3 import song
    from torchax_vae.stage3.sound_families import MusicSound

    vocoder, _ = pair
    ours = TorchaxVAE(vocoder)
    chunks = windows()
    expected = decode_step(vocoder, chunks)
    assert expected.shape == (1, 2, (400 + 400 + 360 - 2 * 344) * HOP)
    assert_close(song([ours(w) for w in chunks], HOP), expected, FP32, "the song of three windows")
    speaker = MusicSound(ours)
    assert speaker.samples(chunks) == expected.shape[2] and speaker.clips(chunks) == 1
    assert_close(speaker.waveform(chunks), expected, FP32, "MusicSound, three windows")
    assert sorted(tuple(s["input_shapes"][-1]) for s in ours.compile_stats()) == [(1, 8, 360), (1, 8, 400)]


def test_interface_as_diffusers_class(pair):
    vocoder, ours = pair
    assert type(ours).__name__ == "MiniMaxMusic3VocoderModel" and isinstance(ours, type(vocoder))
    assert ours.sampling_rate == 44100 and ours.config.latent_channels == 8
    for name in ("encode", "decode", "enable_slicing", "enable_tiling", "tiled_decode", "use_tiling"):
        assert hasattr(ours, name) == hasattr(vocoder, name), name
    with pytest.raises(ValueError, match="3-D"):
        ours(randn(1, 8, 5, 1))
    with pytest.raises(ValueError, match="6 channels .* expects 8"):
        ours(randn(1, 6, 5))
    with pytest.raises(TypeError, match="torch.Tensor"):
        ours(np.zeros((1, 8, 5), np.float32))
    with pytest.raises(ValueError, match=r"decode shape \(1, 6, 5\).* \[B, 8, L\]"):
        ours.precompile("decode", (1, 6, 5))


def test_threads_share_the_wrapper(pair):
    """Four threads at once, two window lengths: each gets its own window's waveform."""
    vocoder, ours = pair
    inputs = [randn(1, 8, 12 + 4 * (i % 2), seed=20 + i) for i in range(4)]
    with torch.no_grad():
        expected = [vocoder(z) for z in inputs]
    out = [None] * 4

    def run(i):
        with torch.no_grad():
            out[i] = ours(inputs[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert_close(out[i], expected[i], FP32, f"thread {i}")


def test_bf16_and_saving(pair, tmp_path):
    vocoder, ours = pair
    z = randn(2, 8, 16, seed=3) * 2
    with torch.no_grad():
        reference = vocoder(z)
        theirs = max_abs_diff(random_vae("minimax-music3-vocoder-tiny").to(torch.bfloat16)(z.bfloat16()), reference)
        mine = max_abs_diff(TorchaxVAE(vocoder, dtype=torch.bfloat16)(z.bfloat16()), reference)
    assert mine <= 2 * theirs, f"bf16 vocoder: max |Δ| {mine:.3g}, PyTorch bf16's {theirs:.3g}"
    ours.save_pretrained(tmp_path / "vocoder")
    plain = type(vocoder).from_pretrained(tmp_path / "vocoder")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vocoder.state_dict().values()))


@pytest.fixture(scope="module")
def folder(tmp_path_factory, pair):
    """A MiniMax Music 3 pipeline folder's vocoder/ (its only decoder), and the windows saved as the pipeline holds
    them (`latent_chunks`)."""
    vocoder, _ = pair
    root = tmp_path_factory.mktemp("minimax_music3")
    vocoder.save_pretrained(root / "vocoder")
    chunks = windows(seed=30)
    torch.save({"latent_chunks": chunks}, root / "chunks.pt")
    torch.save(chunks[0], root / "window.pt")
    return root, chunks


def test_command_writes_the_pipelines_song(pair, folder, tmp_path, capsys):
    """`torchax-vae decode chunks.pt -o song.wav --model FOLDER`: the decode step's song within one int16 step; one
    window alone is its waveform; wrong latents and an encode are one line, exit 2."""
    from test_sound_cli import run

    from torchax_vae.stage3 import sound

    vocoder, _ = pair
    root, chunks = folder
    expected = sound.pcm16(decode_step(vocoder, chunks))[0]
    code, lines = run(capsys, "decode", root / "chunks.pt", "-o", tmp_path / "song.wav", "--model", root,
                      "--no-cache")
    assert code == 0, lines
    pcm, rate = sound.read_wav(tmp_path / "song.wav")
    assert rate == 44100 and pcm.shape == expected.shape and np.abs(pcm.astype(int) - expected).max() <= 1
    code, lines = run(capsys, "decode", root / "window.pt", "-o", tmp_path / "window.wav", "--model", root,
                      "--no-cache")
    assert code == 0, lines
    with torch.no_grad():
        window = sound.pcm16(vocoder(chunks[0]))[0]
    assert np.abs(sound.read_wav(tmp_path / "window.wav")[0].astype(int) - window).max() <= 1
    torch.save([randn(1, 8, 400), randn(1, 6, 400)], tmp_path / "bad.pt")
    code, lines = run(capsys, "decode", tmp_path / "bad.pt", "-o", tmp_path / "bad.wav", "--model", root, "--no-cache")
    assert code == 2 and re.search(r"\(1, 6, 400\) do not fit this MiniMaxMusic3Vocoder: expected \[B, 8, L\]",
                                   lines[0]), lines
    sound.write_wav(tmp_path / "in.wav", pcm, 44100)
    code, lines = run(capsys, "encode", tmp_path / "in.wav", "-o", tmp_path / "z.pt", "--model", root, "--no-cache")
    assert code == 2 and "MiniMaxMusic3Vocoder (MiniMax Music 3) decodes latents and encodes nothing" in lines[0], lines
    code, lines = run(capsys, "decode", root / "window.pt", "-o", tmp_path / "x.mp4", "--model", root, "--no-cache")
    assert code == 2 and "decodes sound alone" in lines[0], lines


def test_service_answers_a_windows_sound(pair, folder):
    """Served from the pipeline folder: a window's latents answer its WAV (the vocoder's waveform within one int16
    step); latents of another channel count and an encode are JSON 400s."""
    from serving import serving

    from torchax_vae.stage3 import sound
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import StreamError, decode_with_sound

    vocoder, _ = pair
    root, chunks = folder
    with torch.no_grad():
        expected = sound.pcm16(vocoder(chunks[1]))[0]
    with serving(create_app({"music": str(root)})) as url:
        wav = decode_with_sound(f"{url}/decode/music", audio=chunks[1])
        with pytest.raises(StreamError, match=r"^400: .*\(1, 6, 40\) do not fit this MiniMaxMusic3Vocoder"):
            decode_with_sound(f"{url}/decode/music", audio=randn(1, 6, 40))
        cut = decode_with_sound(f"{url}/decode/music", audio=chunks[1], audio_start=0.001, audio_end=0.006)
        encode = requests.post(f"{url}/encode/music", params={"shape": [1, 2, 64], "dtype": "float32"},
                               data=randn(1, 2, 64).numpy().tobytes())
        assert encode.status_code == 400 and "is served for its sound" in encode.json()["error"], encode.text
    pcm, rate = sound.read_wav(io.BytesIO(wav))
    assert rate == 44100 and np.abs(pcm.astype(int) - expected).max() <= 1
    pcm, _ = sound.read_wav(io.BytesIO(cut))  # samples 44 to 264, as the audio pipelines crop
    assert pcm.shape[0] == 220 and np.abs(pcm.astype(int) - expected[44:264]).max() <= 1

"""AutoencoderOobleck (Stable Audio's VAE) through TorchaxVAE against the same model in plain PyTorch: waveforms
[B, channels, samples] at rank 3, tiled in time as diffusers tiles them, sliced, in bf16, saved, on the mesh."""

import os
import threading

import pytest
import torch
from helpers import (TOLERANCE, assert_close, bf16_check, check_encode_decode, max_abs_diff, pair_fixture, randn, random_vae)

from torchax_vae import TorchaxVAE

FP32 = TOLERANCE[torch.float32]


pair = pair_fixture("oobleck-tiny")


@pytest.mark.parametrize("samples", [8, 40, 57])
def test_encode_and_decode_match_pytorch(pair, samples):
    """Any length, whole hops (8 here) or not: the posterior (diffusers' class), its sample and the decode."""
    vae, ours = pair
    x = randn(3, 2, samples, seed=samples)
    with torch.no_grad():
        check_encode_decode(vae, ours, x, f"oobleck, {samples} samples")
        theirs, mine = vae.encode(x).latent_dist, ours.encode(x).latent_dist
        assert type(mine) is type(theirs) and ours.latent_shape(tuple(x.shape)) == tuple(theirs.mean.shape)
        assert_close(mine.std, theirs.std, FP32, "posterior std (softplus of the scale)")
        decoded = vae.decode(theirs.mean).sample
        assert decoded.std() > 1e-3  # an output that can tell a wrong decode
        forward = vae(x, sample_posterior=True, generator=torch.Generator().manual_seed(3)).sample
        assert_close(ours(x, sample_posterior=True, generator=torch.Generator().manual_seed(3)).sample, forward, FP32,
                     "forward, posterior sampled")


def test_interface_as_diffusers_class(pair):
    vae, ours = pair
    assert type(ours).__name__ == "OobleckVAE" and isinstance(ours, type(vae))
    assert (ours.hop_length, ours.sampling_rate) == (vae.hop_length, vae.sampling_rate) == (8, 44100)
    for name in ("enable_slicing", "enable_tiling", "disable_tiling", "use_tiling", "use_slicing", "tiled_decode",
                 "tiled_encode", "tile_sample_min_length", "tile_latent_overlap"):
        assert hasattr(ours, name) == hasattr(vae, name), name
    with pytest.raises(ValueError, match="channels"):
        ours.encode(randn(1, 1, 40))  # stereo here
    with pytest.raises(ValueError, match="3-D"):
        ours.decode(randn(1, 6, 5, 1))
    with pytest.raises(ValueError, match=r"has 3 samples .* encodes at least"):
        ours.encode(randn(1, 2, 3))


def test_tiled_in_time_as_diffusers(pair):
    """enable_tiling(): waveforms and latents longer than a tile go in diffusers' windows (trimmed to their cores,
    joined), with the tile settings a user sets on the wrapper; shorter ones in one call."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    tiles = {"tile_sample_min_length": 48, "tile_sample_overlap": 8, "tile_latent_min_length": 10,
             "tile_latent_overlap": 2}
    torch_tiled = random_vae("oobleck-tiny")
    torch_tiled.enable_tiling()
    ours.enable_tiling()
    for name, value in tiles.items():
        setattr(torch_tiled, name, value)
        setattr(ours, name, value)
    assert ours.use_tiling
    x, z = randn(2, 2, 203, seed=4), randn(2, 6, 37, seed=5)
    with torch.no_grad():
        tiled = torch_tiled.encode(x).latent_dist.mean
        assert max_abs_diff(tiled, vae.encode(x).latent_dist.mean) > 1e-3  # tiles that change the result
        assert_close(ours.encode(x).latent_dist.mean, tiled, FP32, "tiled encode")
        assert_close(ours.decode(z).sample, torch_tiled.decode(z).sample, FP32, "tiled decode")
        short = randn(1, 6, 9, seed=6)
        assert_close(ours.decode(short).sample, vae.decode(short).sample, FP32, "shorter than a tile")
    names = {s["name"] for s in ours.compile_stats()}
    assert names == {"encoder", "decoder"}, names


def test_slicing_threads_and_programs(pair):
    """Slicing decodes one batch element per call (one program of batch 1); two threads share the wrapper."""
    vae, _ = pair
    ours = TorchaxVAE(vae)
    ours.enable_slicing()
    z = randn(3, 6, 7, seed=8)
    with torch.no_grad():
        expected = vae.decode(z).sample
        assert_close(ours.decode(z).sample, expected, FP32, "sliced decode")
    assert {s["input_shapes"][-1][0] for s in ours.compile_stats()} == {1}
    ours.disable_slicing()
    results = {}

    def decode(i):
        with torch.no_grad():
            results[i] = ours.decode(z).sample

    threads = [threading.Thread(target=decode, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert_close(results[i], expected, FP32, f"thread {i}")


def test_bf16_and_saving(pair, tmp_path):
    vae, ours = pair
    # (4 x 2 x 512 samples: on a few dozen the max |Δ| of either side is one rounding's luck; here ours measured
    # 1.2-1.35x PyTorch bf16's, which computes weight_norm's norm in float32 where torchax sums in bf16)
    bf16_check(vae, TorchaxVAE(vae, dtype=torch.bfloat16), randn(4, 2, 512, seed=10), "oobleck")
    ours.save_pretrained(tmp_path / "vae")
    plain = type(vae).from_pretrained(tmp_path / "vae")
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), vae.state_dict().values()))
    again = TorchaxVAE.from_pretrained(str(tmp_path / "vae"), subfolder=None)
    z = randn(1, 6, 5, seed=11)
    with torch.no_grad():
        assert torch.equal(again.decode(z).sample, ours.decode(z).sample)


@pytest.fixture(scope="module")
def stable_audio(tmp_path_factory, pair):
    """A Stable Audio pipeline folder's VAE (vae/), the latents its pipeline returns with output_type="latent"
    (`audios`, [B, C, L]) saved, and diffusers' decode of them (its stage 3 before the crop)."""
    vae, _ = pair
    root = tmp_path_factory.mktemp("stable-audio")
    vae.save_pretrained(root / "vae")
    z = randn(2, 6, 40, seed=12)
    torch.save(z, root / "latents.pt")
    with torch.no_grad():
        return root, z, vae.decode(z).sample  # [2, 2, 320] at 44.1 kHz


def test_command_writes_the_pipelines_sound(stable_audio, tmp_path, capsys):
    """`torchax-vae decode latents.pt -o clip.wav`: one 16-bit WAV per clip, diffusers' decode within one int16
    step, cropped as StableAudioPipeline crops (`audio[:, :, int(start * rate):int(end * rate)]`); bad input is one
    line and exit 2 before anything compiles."""
    import re

    from test_sound_cli import run
    from torchax_vae.engine import programs
    from torchax_vae.stage3 import sound

    root, z, expected = stable_audio
    code, lines = run(capsys, "decode", root / "latents.pt", "-o", tmp_path / "clip.wav", "--model", root,
                      "--no-cache")
    assert code == 0, lines
    for i in range(2):
        pcm, rate = sound.read_wav(tmp_path / f"clip_{i}.wav")
        assert rate == 44100 and np_max(pcm - sound.pcm16(expected)[i]) <= 1
    start, end = 0.001, 0.006  # seconds: samples 44 to 264, as the pipeline's int(seconds * sampling_rate)
    code, lines = run(capsys, "decode", root / "latents.pt", "-o", tmp_path / "cut.wav", "--model", root,
                      "--audio-start", start, "--audio-end", end, "--no-cache")
    assert code == 0, lines
    cut = sound.pcm16(expected[:, :, int(start * 44100):int(end * 44100)])
    assert cut.shape[1] == 220 and np_max(sound.read_wav(tmp_path / "cut_1.wav")[0] - cut[1]) <= 1
    original = programs.Programs.run

    def compiled(*args, **kwargs):
        raise AssertionError("compiled before refusing")

    programs.Programs.run = compiled
    try:
        torch.save(randn(1, 5, 40), tmp_path / "bad.pt")
        cases = [
            (["decode", tmp_path / "bad.pt", "-o", tmp_path / "x.wav"], r"\(1, 5, 40\) do not fit .*expected \[B, 6, L\]"),
            (["decode", root / "latents.pt", "-o", tmp_path / "x.wav", "--audio-end", 1.0],
             r"--audio-start 0 and --audio-end 1 .* <= 0.00725624, the length these audio latents decode to \(320"),
            (["decode", root / "latents.pt", "-o", tmp_path / "x.mp4"], r"AutoencoderOobleck \(Stable Audio\) decodes "
                                                                         r"sound alone: write .* -o NAME\.wav"),
            (["decode", root / "latents.pt", "-o", tmp_path / "x.mp4", "--audio-end", 1.0],
             r"--audio-start and --audio-end crop the sound written alone, to a \.wav"),
        ]
        for args, message in cases:
            code, lines = run(capsys, *args, "--model", root, "--no-cache")
            assert code == 2 and len(lines) == 1 and re.search(message, lines[0]), (args, lines)
    finally:
        programs.Programs.run = original
    assert not list(tmp_path.glob("x*"))


def np_max(difference) -> int:
    return int(abs(difference.astype(int)).max())


def test_service_answers_the_pipelines_sound(stable_audio):
    """Served from the pipeline folder: its latents alone answer the WAV (one clip) or the waveform (`pt`) of
    diffusers' decode, cropped with audio_start / audio_end, as jobs of the device worker; a video request, an
    encode or latents of another shape are JSON 400s that leave the server serving."""
    import io

    import requests
    from serving import serving

    from torchax_vae.stage3 import sound
    from torchax_vae.serve import create_app
    from torchax_vae.serve.client import StreamError, decode_with_sound

    root, z, expected = stable_audio
    with serving(create_app({"stable-audio": str(root)})) as url:
        endpoint = f"{url}/decode/stable-audio"
        wav = decode_with_sound(endpoint, audio=z[:1])
        cut = decode_with_sound(endpoint, audio=z[1:], audio_start=0.001, audio_end=0.006)
        answer = requests.post(endpoint, params={"audio_shape": list(z.shape), "dtype": "float32", "output_type": "pt"},
                               data=z.numpy().tobytes())
        refusals = [
            (dict(latents=z[:1, :, :, None], audio=z[:1]), r"decodes sound alone, no video: send its latents with "
                                                           r"audio_shape="),
            (dict(audio=randn(1, 5, 40)), r"audio latents \(1, 5, 40\) do not fit"),
            (dict(audio=z[:1], audio_end=9.0), r"audio_start 0 and audio_end 9 \(seconds\) must satisfy"),
        ]
        for kwargs, message in refusals:
            with pytest.raises(StreamError, match="^400: .*" + message):
                decode_with_sound(endpoint, **kwargs)
        encode = requests.post(f"{url}/encode/stable-audio", params={"shape": [1, 2, 64], "dtype": "float32"},
                               data=randn(1, 2, 64).numpy().tobytes())
        assert encode.status_code == 400 and "is served for its sound" in encode.json()["error"], encode.text
        metrics = requests.get(f"{url}/metrics").text
        assert requests.get(f"{url}/health/ready").status_code == 200
    pcm, rate = sound.read_wav(io.BytesIO(wav))
    assert rate == 44100 and np_max(pcm - sound.pcm16(expected)[0]) <= 1
    pcm, _ = sound.read_wav(io.BytesIO(cut))
    assert np_max(pcm - sound.pcm16(expected[:, :, 44:264])[1]) <= 1
    assert answer.status_code == 200 and answer.headers["sample_rate"] == "44100"
    got = torch.frombuffer(bytearray(answer.content), dtype=torch.float32).view(*eval(answer.headers["shape"]))
    assert_close(got, expected, FP32, "served Stable Audio waveform")
    # the sound ran on the device worker: its three jobs (the refusals never reached it) are counted there
    assert 'torchax_vae_device_seconds_count{kind="sound",model="stable-audio"} 3.0' in metrics, metrics[:2000]


@pytest.mark.slow  # 32 s: offline TPU and GPU compiles (CI: every sixth run)
def test_plan_takes_the_sound_input_as_it_is(tmp_path, capsys):
    """`torchax-vae plan` of an audio VAE: --shape is its input B,C,T (compiled offline for an H100, not run on a
    GPU); a video's FRAMES,HEIGHT,WIDTH for it, and `warmup` (videos), are one line, exit 2; the user sees no torch
    deprecation noise from diffusers' weight_norm."""
    import json

    from torchax_vae import cli

    import subprocess
    import sys

    random_vae("oobleck-tiny").save_pretrained(tmp_path / "vae")
    # its own process: pytest records warnings itself, so only a user's stderr shows what a user would see
    proc = subprocess.run([sys.executable, "-m", "torchax_vae", "plan", "--model", str(tmp_path), "--target", "h100",
                           "--shape", "1,6,40", "--json", "--no-progress"], capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["output_shape"] == [1, 2, 320] and plan["fits"] and not proc.stderr.strip(), (plan, proc.stderr)
    # a reader that has gone (`torchax-vae plan ... | head`): no traceback, no "Exception ignored" at exit
    reader = subprocess.Popen([sys.executable, "-m", "torchax_vae", "plan", "--model", str(tmp_path), "--target",
                               "h100", "--shape", "1,6,40", "--no-progress"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    reader.stdout.close()
    with reader.stderr:
        err = reader.stderr.read()
    assert reader.wait() == 0 and "Traceback" not in err and "BrokenPipe" not in err, err
    for args, message in ((["plan", "--target", "h100", "--shape", "40,64,64"], "expects 6"),
                          (["warmup", "--shape", "1,6,40"], "takes sound, not video")):
        code = cli.main([*args[:1], "--model", str(tmp_path), *args[1:]])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err

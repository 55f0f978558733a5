"""The `torchax-vae` command on tiny models with random weights: end to end in subprocesses, bad input in-process."""

import functools
import gc
import json
import os
import re
import subprocess
import sys
import warnings

import imageio.v3 as iio
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from helpers import TOLERANCE, assert_close, random_vae
from torchax_vae.engine import staging
from torchax_vae.media import files
from torchax_vae.cli import main as cli_main
from torchax_vae.cli.demo import demo
from torchax_vae.models.cogvideox import STAGES

ATOL = TOLERANCE[torch.float32]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A CogVideoX pipeline folder with only its vae/ (the tiny config, seeded random weights)."""
    root = tmp_path_factory.mktemp("checkpoint")
    random_vae("tiny").save_pretrained(root / "vae")
    return root


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("jax-cache")


def cli(*args, cwd=None, cache=None, timeout=300) -> subprocess.CompletedProcess:
    env = dict(os.environ, TORCHAX_VAE_CACHE_DIR=str(cache) if cache else "off")
    return subprocess.run(
        [sys.executable, "-P", "-m", "torchax_vae", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
    )


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


def imread(path, meta: bool = False):
    """The MP4 as imageio reads it, uint8 [F, H, W, 3], or its metadata.

    imageio's ffmpeg reader leaves its pipes for the garbage collector to close,
    and starts ffmpeg with a fork + exec, which JAX (imported here) warns about.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="unclosed file", category=ResourceWarning)
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        result = iio.immeta(path) if meta else iio.imread(path)
        gc.collect()
    return result


def to_uint8(video: torch.Tensor) -> np.ndarray:
    """[3, F, H, W] in [-1, 1] -> uint8 [F, H, W, 3], as diffusers' VideoProcessor."""
    return ((video / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 3, 0).numpy()


def test_decode_writes_the_mp4_the_pipeline_would(model_dir, cache_dir, tmp_path):
    vae = random_vae("tiny")
    z = torch.randn(1, 3, 4, 4, 6, generator=torch.Generator().manual_seed(0))  # [B, F, C, H, W] as stage 2 saves
    torch.save(z, tmp_path / "latents.pt")
    out = ok(cli("decode", tmp_path / "latents.pt", "-o", tmp_path / "video.mp4", "--model", model_dir, cache=cache_dir))
    assert "frames/s" in out and "compile" in out
    video = imread(tmp_path / "video.mp4")
    assert video.shape == (9, 32, 48, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latents.pt", "video.mp4"]  # nothing half-written
    with torch.no_grad():
        expected = to_uint8(vae.decode(z.permute(0, 2, 1, 3, 4) / vae.config.scaling_factor).sample[0])
    files.write_mp4(tmp_path / "expected.mp4", expected)  # PyTorch's frames through the same (lossy) encoder
    # H.264 is lossy, and a one-level change of a pixel (rounding of a 1e-6 difference) can change its
    # choices elsewhere: compare with PyTorch's frames within what the codec itself does to them.
    written = imread(tmp_path / "expected.mp4").astype(float)
    codec = np.abs(written - expected).max()
    error = np.abs(video.astype(float) - expected).max()
    assert error <= codec + 2, f"max |Δ| {error} of 255 against PyTorch's frames; the codec's own {codec}"
    mean = np.abs(video.astype(float) - written).mean()
    assert mean <= 0.5, f"mean |Δ| {mean:.3f} of 255 against PyTorch's frames written the same way"


@pytest.mark.slow  # the default suite keeps a faster case of the same feature; CI runs this with -m slow
def test_decode_batch_of_two_in_vae_layout_writes_two_files(model_dir, tmp_path):
    z = torch.randn(2, 4, 2, 4, 4, generator=torch.Generator().manual_seed(1))  # [B, C, F, H, W]
    save_file({"latents": z}, tmp_path / "latents.safetensors")
    ok(cli("decode", tmp_path / "latents.safetensors", "-o", tmp_path / "clip.mp4", "--model", model_dir,
           "--layout", "BCFHW", "--fps", 4, "--no-cache"))
    for name in ("clip_0.mp4", "clip_1.mp4"):
        assert imread(tmp_path / name).shape == (8, 32, 32, 3)  # 2 latent frames (even: no odd first frame)
        assert imread(tmp_path / name, meta=True)["fps"] == 4
    assert not (tmp_path / "clip.mp4").exists()


@pytest.mark.slow  # 21 s on 2 cores (each direction alone: the tests around it)
@pytest.mark.heavy  # 78 s on 2 cores (AMD); the streamed encode's parity: test_wan_cli.py and test_stream.py
def test_encode_then_decode_round_trip(model_dir, cache_dir, tmp_path):
    vae = random_vae("tiny")
    frames = np.random.default_rng(0).integers(0, 256, (9, 32, 48, 3), dtype=np.uint8)
    files.write_mp4(tmp_path / "in.mp4", frames)
    read_back = imread(tmp_path / "in.mp4")  # what the command will see (H.264 changed the pixels)
    out = ok(cli("encode", tmp_path / "in.mp4", "-o", tmp_path / "latents.npy", "--model", model_dir, "--json",
                 cache=cache_dir))
    latents = np.load(tmp_path / "latents.npy")
    assert latents.shape == (1, 3, 4, 4, 6)  # [B, F, C, H, W], as the pipelines hold latents
    assert json.loads(out)["latent_shape"] == list(latents.shape)  # the shape as written, in its layout
    x = torch.from_numpy(read_back).permute(3, 0, 1, 2)[None].float() / 127.5 - 1
    with torch.no_grad():
        expected = vae.encode(x).latent_dist.mean * vae.config.scaling_factor
    assert_close(torch.from_numpy(latents).permute(0, 2, 1, 3, 4), expected, ATOL, "encode command vs PyTorch")
    ok(cli("decode", tmp_path / "latents.npy", "-o", tmp_path / "out.mp4", "--model", model_dir, cache=cache_dir))
    assert imread(tmp_path / "out.mp4").shape == (9, 32, 48, 3)


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # about 60 s on 2 cores (AMD): out of CI's time
def test_warmup_fills_the_cache_that_decode_then_uses(model_dir, tmp_path):
    cache = tmp_path / "cache"
    out = ok(cli("warmup", "--model", model_dir, "--shape", "9,32,48", "--json", cache=cache))
    # one frame batch (3 latent frames): one program per decoder layer, the default on CPU (torchax_vae.engine.staging)
    assert json.loads(out)["decode"]["programs"] == len(staging.plan(random_vae("tiny").decoder, STAGES))
    entries = len(list(cache.iterdir()))
    assert entries >= 1
    torch.save(torch.randn(1, 3, 4, 4, 6), tmp_path / "latents.pt")
    ok(cli("decode", tmp_path / "latents.pt", "-o", tmp_path / "v.mp4", "--model", model_dir, cache=cache))
    assert len(list(cache.iterdir())) >= entries  # served from the cache (the uint8 conversion may add one)


def _bad(capsys, tmp_path, *args, expect: str):
    """In-process (`cli.main(argv)`): exit status 2, one line naming the problem, no traceback, no output file."""
    code = cli_main([*map(str, args), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2, f"exit {code}: {err[-2000:]}"
    lines = [line for line in err.splitlines() if "torchax-vae" in line]
    assert len(lines) == 1 and expect in lines[0], err[-2000:]
    assert "Traceback" not in err
    leftovers = [p.name for p in tmp_path.iterdir() if p.suffix == ".mp4" or ".partial" in p.name]
    assert leftovers == [], leftovers


def test_bad_inputs_exit_2_with_one_line(model_dir, tmp_path, capsys):
    good = tmp_path / "latents.pt"
    torch.save(torch.randn(1, 3, 4, 4, 6), good)
    out = tmp_path / "out.mp4"
    bad = functools.partial(_bad, capsys, tmp_path)
    bad("decode", tmp_path / "missing.pt", "-o", out, "--model", model_dir, expect="does not exist")
    (tmp_path / "garbage.pt").write_bytes(b"not a tensor")
    bad("decode", tmp_path / "garbage.pt", "-o", out, "--model", model_dir, expect="cannot read latents")
    torch.save(torch.randn(4, 4, 6), tmp_path / "flat.pt")
    bad("decode", tmp_path / "flat.pt", "-o", out, "--model", model_dir, expect="must be 5-D")
    torch.save(torch.randn(1, 3, 16, 4, 6), tmp_path / "channels.pt")
    bad("decode", tmp_path / "channels.pt", "-o", out, "--model", model_dir, expect="decoder takes 4")
    bad("decode", good, "-o", out, "--model", tmp_path / "no-such-model", expect="does not exist")
    bad("decode", good, "-o", tmp_path / "no-such-folder" / "out.mp4", "--model", model_dir, expect="does not exist")
    bad("decode", good, "-o", tmp_path, "--model", model_dir, expect="must end in .mp4 or .npy")
    bad("encode", tmp_path / "missing.mp4", "-o", tmp_path / "z.pt", "--model", model_dir, expect="video file")
    with pytest.raises(files.InputError, match="does not exist"):  # --debug: the exception itself
        cli_main(["decode", str(tmp_path / "missing.pt"), "-o", str(out), "--model", str(model_dir), "--debug"])


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "video.mp4"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with files.atomic_output(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("disk full")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["video.mp4"]


def test_demo_without_a_model_folder_says_so(tmp_path):
    with pytest.raises(files.InputError, match="no VAE at"):
        demo(tmp_path / "demo.mp4", model=tmp_path / "nothing", progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # the default suite keeps a faster case of the same feature
@pytest.mark.heavy  # about 60 s on 2 cores (AMD): out of CI's time
def test_demo_pipeline_on_a_random_tiny_model(tmp_path):
    """The demo's code path (the shipped model's quality is tested separately): MP4, parity, PSNR reported."""
    random_vae("tiny").save_pretrained(tmp_path / "model")
    result = demo(tmp_path / "demo.mp4", model=tmp_path / "model", progress=False)
    assert result["max_abs_vs_pytorch"] <= ATOL, result
    assert np.isfinite(result["psnr_db"])
    assert imread(tmp_path / "demo.mp4").shape == (17, 96, 256, 3)  # input | reconstruction


@pytest.mark.slow  # 37 s on 2 cores: README command 1 runs the same demo
def test_shipped_demo_runs_offline_and_reaches_25_db(tmp_path):
    """README command 1: `torchax-vae demo` in an empty folder, hub offline, with the weights in the package."""
    from torchax_vae.cli.demo import DEMO_MODEL

    weights = sorted(DEMO_MODEL.glob("*.safetensors"))
    assert weights, f"no shipped weights in {DEMO_MODEL}"
    assert sum(w.stat().st_size for w in weights) <= 5 * 2**20, "the demo weights must stay within 5 MB"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TORCHAX_VAE_CACHE_DIR="off")
    proc = subprocess.run([sys.executable, "-P", "-m", "torchax_vae", "demo"], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=env)
    out = ok(proc)
    psnr = float(re.search(r"PSNR (\d+\.\d+) dB", out).group(1))
    max_abs = float(re.search(r"max \|Δ\| vs the same model in PyTorch (\S+);", out).group(1))
    assert psnr >= 25.0, f"demo PSNR {psnr:.2f} dB < 25"
    assert max_abs <= ATOL, f"max |Δ| vs PyTorch {max_abs:.3g}"
    assert imread(tmp_path / "torchax_vae_demo.mp4").shape == (17, 96, 256, 3)

"""`torchax-vae` under faults: failing ffmpeg, bad arguments, interrupts, slow imports, missing models, lossless output."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_cli import to_uint8

from helpers import by_hand, needs, random_vae
from torchax_vae.media import files
from torchax_vae.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoint")
    random_vae("tiny").save_pretrained(root / "vae")
    return root


@pytest.fixture
def latents(tmp_path):
    path = tmp_path / "latents.pt"
    torch.save(torch.randn(1, 2, 4, 4, 6, generator=torch.Generator().manual_seed(0)), path)  # [B, F, C, H, W]
    return path


def run(capsys, *args) -> tuple[int, list[str]]:
    """cli.main in this process: (exit status, the stderr lines naming the command, progress lines left out)."""
    code = cli_main([*map(str, args)])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    progress = r": batch \d+/\d+ |: \d+ of \d+ frames written "  # (encode's batches, decode's frames)
    return code, [line for line in err.splitlines() if "torchax-vae" in line and not re.search(progress, line)]


def fake_ffmpeg(tmp_path, message: str) -> str:
    """An ffmpeg that reads a little of its input, says `message` on stderr and exits 1 (a full disk, say)."""
    exe = tmp_path / "ffmpeg"
    exe.write_text(f"#!/bin/sh\nhead -c 1000 > /dev/null\necho '{message}' >&2\nexit 1\n")
    exe.chmod(0o755)
    return str(exe)


# ----- 1. ffmpeg failures -----


def test_a_failing_ffmpeg_is_an_error_and_leaves_the_target_alone(tmp_path, monkeypatch):
    import imageio_ffmpeg

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", lambda: fake_ffmpeg(tmp_path, "No space left on device"))
    target = tmp_path / "video.mp4"
    target.write_bytes(b"old")
    frames = np.zeros((3, 16, 16, 3), np.uint8)
    with pytest.raises(files.WriteError, match="ffmpeg failed: No space left on device"):
        files.write_mp4(target, frames)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ffmpeg", "video.mp4"]  # no partial file


def test_decode_exits_1_with_ffmpegs_message(model_dir, latents, tmp_path, monkeypatch, capsys):
    import imageio_ffmpeg

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", lambda: fake_ffmpeg(tmp_path, "No space left on device"))
    out = tmp_path / "video.mp4"
    out.write_bytes(b"old")
    code, lines = run(capsys, "decode", latents, "-o", out, "--model", model_dir, "--no-cache")
    assert code == 1 and len(lines) == 1 and "No space left on device" in lines[0], lines
    assert out.read_bytes() == b"old"
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


def test_stale_partial_files_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "video.mp4"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".video.mp4.{dead.pid}.abc123.partial.mp4"  # what `kill -9` during a write leaves
    mine = tmp_path / f".video.mp4.{os.getpid()}.def456.partial.mp4"  # a live writer's: kept
    other = tmp_path / f".other.mp4.{dead.pid}.abc123.partial.mp4"  # another target's: kept
    for path in (stale, mine, other):
        path.write_bytes(b"x")
    files.write_mp4(target, np.zeros((2, 16, 16, 3), np.uint8))
    assert not stale.exists() and mine.exists() and other.exists() and target.stat().st_size > 0


# ----- 2. exit codes: every user error is 2, before anything loads -----


@pytest.mark.parametrize("fps", ["nan", "inf", "0", "-1", "fast", "1e9", "100000", "240.5"])
def test_bad_fps_is_refused_up_front(latents, tmp_path, capsys, fps):
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["decode", str(latents), "-o", str(tmp_path / "v.mp4"), "--model", "x/y", f"--fps={fps}"])
    assert exit_info.value.code == 2 and "--fps" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["warmup", "--model", "x/y", "--shape", "9,32,32", "--batch", "0"],
                                  ["encode", "in.mp4", "-o", "z.pt", "--model", "x/y", "--frames", "0"],
                                  ["encode", "in.mp4", "-o", "z.pt", "--model", "x/y", "--frames", "-3"]])
def test_non_positive_counts_are_refused(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main(args)
    assert exit_info.value.code == 2 and "must be a positive int" in capsys.readouterr().err


def test_cache_dir_below_a_file_is_exit_2(model_dir, latents, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", model_dir,
                      "--cache-dir", tmp_path / "file" / "cache")
    assert code == 2 and len(lines) == 1 and "is a file, not a folder" in lines[0], lines


def test_latents_as_return_dict_false_gives_them(model_dir, tmp_path, capsys):
    z = torch.randn(1, 2, 4, 4, 6, generator=torch.Generator().manual_seed(0))
    torch.save((z,), tmp_path / "tuple.pt")  # what `pipe(..., return_dict=False)` hands back
    code, _ = run(capsys, "decode", tmp_path / "tuple.pt", "-o", tmp_path / "v.npy", "--model", model_dir, "--no-cache")
    assert code == 0
    torch.save([z, z], tmp_path / "two.pt")  # a pair is (video, audio), as LTX-2's pipeline returns: CogVideoX has no sound
    code, lines = run(capsys, "decode", tmp_path / "two.pt", "-o", tmp_path / "w.npy", "--model", model_dir)
    assert code == 2 and "makes video without sound; the families with sound: LTX-2" in lines[0], lines
    torch.save([z, z, z], tmp_path / "three.pt")
    code, lines = run(capsys, "decode", tmp_path / "three.pt", "-o", tmp_path / "w.npy", "--model", model_dir)
    assert code == 2 and "expected a tensor or a 1-tuple" in lines[0], lines


# ----- 3. interrupts -----


def test_ctrl_c_is_one_line_and_exit_130(model_dir, latents, tmp_path, monkeypatch, capsys):
    from torchax_vae.cli import commands

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "decode_file", interrupted)
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", model_dir)
    assert code == 130 and lines == ["torchax-vae decode: interrupted; no output written"]


# ----- 4. errors come back before torch, JAX and diffusers load -----


def test_argument_errors_come_back_without_importing_torch_or_jax(tmp_path):
    """What makes the error fast is that torch, JAX and diffusers are never imported: that is asserted, not a time."""
    code = (
        "import sys; from torchax_vae.cli import main; "
        f"rc = main(['decode', {str(tmp_path / 'missing.pt')!r}, '-o', 'v.mp4', '--model', 'x/y']); "
        "heavy = [m for m in ('torch', 'jax', 'diffusers') if m in sys.modules]; "
        "print(rc, heavy)"
    )
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    rc, heavy = proc.stdout.strip().split(" ", 1) if proc.stdout else ("?", "?")
    assert (rc, heavy) == ("2", "[]"), proc.stdout + proc.stderr
    assert "latents file" in proc.stderr and "does not exist" in proc.stderr


# ----- 5. model and file errors -----


def test_model_and_file_errors_say_what_and_what_was_expected(latents, tmp_path, capsys):
    out = tmp_path / "v.mp4"
    code, lines = run(capsys, "decode", latents, "-o", out, "--model", tmp_path / "no-such-model")
    assert code == 2 and "--model" in lines[0] and "does not exist: expected a diffusers VAE or pipeline folder" in lines[0], lines
    (tmp_path / "empty").mkdir()
    code, lines = run(capsys, "decode", latents, "-o", out, "--model", tmp_path / "empty")
    assert code == 2 and "has no vae/config.json" in lines[0], lines
    (tmp_path / "text.pt").write_text("hello, not a tensor")
    code, lines = run(capsys, "decode", tmp_path / "text.pt", "-o", out, "--model", "org/model")
    assert code == 2 and f"cannot read latents from {tmp_path / 'text.pt'}: not a file torch.save(latents) wrote" \
        in lines[0], lines
    (tmp_path / "empty.pt").write_bytes(b"")
    code, lines = run(capsys, "decode", tmp_path / "empty.pt", "-o", out, "--model", "org/model")
    assert code == 2 and f"latents file {tmp_path / 'empty.pt'} is empty" in lines[0], lines
    code, lines = run(capsys, "encode", latents, "-o", tmp_path / "z.pt", "--model", "org/model")
    assert code == 2 and "is a latents file (.pt), not a video" in lines[0], lines


def test_latents_of_another_vae_name_the_model_not_the_layout(model_dir, tmp_path, capsys):
    """Wan-style 16-channel latents given to the tiny CogVideoX (4 channels): the model is what is wrong."""
    path = tmp_path / "wan.pt"
    torch.save(torch.randn(1, 16, 2, 4, 6), path)
    code, lines = run(capsys, "decode", path, "-o", tmp_path / "v.mp4", "--model", model_dir, "--layout", "BCFHW")
    assert code == 2 and "another VAE's latents: check --model (AutoencoderKLCogVideoX here)" in lines[0], lines
    assert "--layout" not in lines[0]
    torch.save(torch.randn(1, 4, 2, 4, 6), path)  # the VAE's own layout, read as the pipeline's: the layout is wrong
    code, lines = run(capsys, "decode", path, "-o", tmp_path / "v.mp4", "--model", model_dir, "--layout", "BFCHW")
    assert code == 2 and "read as --layout BCFHW they would fit" in lines[0], lines


def test_an_uncached_hub_id_offline_fails_at_once(latents, tmp_path, monkeypatch, capsys):
    import socket

    from huggingface_hub import constants

    lookups = []

    def offline(*args, **kwargs):
        lookups.append(args[:2])
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(socket, "getaddrinfo", offline)
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", "org/model")
    assert code == 2 and "not in the Hugging Face cache" in lines[0] and "cannot be reached" in lines[0], lines
    # at once: one look-up, no retries (before: ~30 s of huggingface_hub's retries, then "no file named config.json")
    assert len(lookups) <= 1, lookups


def test_a_cached_hub_id_loads_from_the_cache_without_the_network(model_dir, latents, tmp_path, monkeypatch, capsys):
    import shutil
    import socket

    from huggingface_hub import constants

    cache = tmp_path / "hub"
    repo = cache / "models--org--model"
    shutil.copytree(model_dir, repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: pytest.fail("the network was asked"))
    code, _ = run(capsys, "decode", latents, "-o", tmp_path / "v.npy", "--model", "org/model")
    assert code == 0 and (tmp_path / "v.npy").is_file()


def test_a_config_that_does_not_fit_its_weights_names_the_first_mismatch(model_dir, latents, tmp_path, capsys):
    import json
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(model_dir, bad)
    config = json.loads((bad / "vae" / "config.json").read_text())
    config["latent_channels"] *= 2  # the weights were saved for the original count
    (bad / "vae" / "config.json").write_text(json.dumps(config))
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", bad)
    # before: "Error(s) in loading state_dict for AutoencoderKLCogVideoX:" with nothing after the colon
    assert code == 2 and "size mismatch for" in lines[0], lines


def test_a_load_error_that_announces_its_details_keeps_the_first():
    from torchax_vae.stage3.loading import summary

    error = RuntimeError("Error(s) in loading state_dict for AutoencoderKLCogVideoX:\n\tsize mismatch for "
                         "encoder.conv_in.weight: copying a param with shape [8, 3] ...\n\tsize mismatch for b")
    assert summary(error) == ("Error(s) in loading state_dict for AutoencoderKLCogVideoX: size mismatch for "
                              "encoder.conv_in.weight: copying a param with shape [8, 3] ... (and 1 more)")
    assert summary(RuntimeError("")) == "RuntimeError"


def test_a_saved_pipeline_output_is_named_without_torchs_weights_only_advice(tmp_path, capsys):
    from diffusers.pipelines.cogvideo.pipeline_output import CogVideoXPipelineOutput

    saved = tmp_path / "output.pt"
    torch.save(CogVideoXPipelineOutput(frames=torch.zeros(1, 2, 4, 4, 6)), saved)  # instead of its .frames
    code, lines = run(capsys, "decode", saved, "-o", tmp_path / "v.mp4", "--model", "org/model")
    assert code == 2 and "it holds a diffusers.pipelines.cogvideo.pipeline_output.CogVideoXPipelineOutput" in lines[0]
    assert "weights_only" not in lines[0] and "\x1b" not in lines[0] and ".frames" in lines[0], lines


# ----- 7. lossless output -----


def test_npy_output_is_the_pipelines_frames(model_dir, tmp_path, capsys):
    vae = random_vae("tiny")
    z = torch.randn(1, 2, 4, 4, 6, generator=torch.Generator().manual_seed(0))
    torch.save(z, tmp_path / "latents.pt")
    code, _ = run(capsys, "decode", tmp_path / "latents.pt", "-o", tmp_path / "video.npy", "--model", model_dir,
                  "--no-cache")
    assert code == 0
    frames = np.load(tmp_path / "video.npy")
    with torch.no_grad():
        expected = to_uint8(vae.decode(z.permute(0, 2, 1, 3, 4) / vae.config.scaling_factor).sample[0])
    assert frames.dtype == np.uint8 and frames.shape == expected.shape
    differ = np.abs(frames.astype(int) - expected).max()
    assert differ <= 1, f"max |Δ| {differ} levels: only rounding of a ~1e-6 difference may change a level"
    assert (frames == expected).mean() > 0.999


# ----- 8. importing from the repository folder -----


@pytest.mark.slow  # 14 s: a process (CI: every sixth run)
def test_import_from_the_repository_folder_finds_the_patches():
    code = "import torchax_vae.patches, torchax_vae.models; print(torchax_vae.patches.apply.__module__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


# ----- issue 21: outputs that would replace the input or cannot be written, long runs, messages -----


def test_an_output_that_is_the_input_is_refused(model_dir, tmp_path, capsys):
    latents = tmp_path / "np_f.npy"
    np.save(latents, np.random.default_rng(0).standard_normal((1, 2, 4, 4, 6)).astype(np.float32))
    before = latents.read_bytes()
    (tmp_path / "sub").mkdir()
    for out in (latents, tmp_path / "sub" / ".." / "np_f.npy"):
        code, lines = run(capsys, "decode", latents, "-o", out, "--model", model_dir, "--no-cache")
        assert code == 2 and len(lines) == 1 and "is the input" in lines[0], lines
    assert latents.read_bytes() == before  # before: silently replaced by the frames, exit 0
    video = tmp_path / "clip.mp4"
    files.write_mp4(video, np.zeros((5, 32, 32, 3), np.uint8))
    alias = tmp_path / "latents.npy"
    alias.symlink_to(video)  # the same file under another name
    code, lines = run(capsys, "encode", video, "-o", alias, "--model", model_dir)
    assert code == 2 and "is the input" in lines[0], lines


def test_a_folder_no_file_can_be_made_in_fails_up_front_naming_the_users_path(model_dir, latents, monkeypatch, capsys):
    from torchax_vae.cli import commands

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the output was checked")

    monkeypatch.setattr(commands, "load_vae", never)
    code, lines = run(capsys, "decode", latents, "-o", "/proc/out.mp4", "--model", model_dir, "--no-cache")
    # as root, /proc passes the permission bits but takes no new file; before: failed after the decode, naming
    # the temporary .partial file
    assert code == 2 and len(lines) == 1 and "/proc/out.mp4" in lines[0] and ".partial" not in lines[0], lines


def test_a_write_that_fails_late_names_the_target_not_the_temporary_file(tmp_path, monkeypatch):
    def full_disk(file, array):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "_write_all", full_disk)  # the frames' write (files.frame_writer)
    target = tmp_path / "frames.npy"
    with pytest.raises(files.WriteError, match=f"cannot write {target}: No space left on device$"):
        files.write_frames(target, np.zeros((1, 2, 2, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_a_folder_should_be_is_named_as_such(latents, tmp_path, capsys):
    code, lines = run(capsys, "decode", latents, "-o", latents / "out.mp4", "--model", tmp_path)
    assert code == 2 and f"{latents} is a file, not a folder" in lines[0], lines


def test_four_dimensional_latents_are_refused_as_the_api_refuses_them(model_dir, tmp_path, capsys):
    path = tmp_path / "one.pt"
    torch.save(torch.randn(2, 4, 4, 6), path)  # [F, C, H, W]: one video, the batch axis dropped
    code, lines = run(capsys, "decode", path, "-o", tmp_path / "out.mp4", "--model", model_dir, "--no-cache")
    assert code == 2 and "must be 5-D" in lines[0] and "latents[None]" in lines[0], lines


@pytest.mark.slow  # 15 s on 2 cores
def test_a_long_decode_says_how_long_up_front_and_logs_progress_with_an_eta(model_dir, tmp_path, monkeypatch, capsys):
    from torchax_vae.cli import commands
    from torchax_vae.stage3 import input_checks

    monkeypatch.setattr(commands, "LONG_RUN_SECONDS", 0)  # every run is "long": the estimate is printed
    monkeypatch.setattr(input_checks, "LARGE_OUTPUT_BYTES", 0)
    path = tmp_path / "long.pt"
    torch.save(torch.randn(1, 9, 4, 2, 2, generator=torch.Generator().manual_seed(0)), path)  # 4 frame batches
    code = cli_main(["decode", str(path), "-o", str(tmp_path / "out.npy"), "--model", str(model_dir), "--no-cache"])
    err = capsys.readouterr().err  # not a terminal: progress as lines
    assert code == 0, err
    assert "GB of uint8 frames" not in err, err  # streamed: nothing is held until written
    # streamed: the estimate after the first chunk (CogVideoX's first frame batch: 9 of the 33 frames), then
    # frames written, as ffmpeg takes them
    assert re.search(r"decode: this will take about \d+:\d\d:\d\d \(33 frames; the first 9 took", err), err
    progress = re.findall(r"decode: (\d+) of 33 frames written \(\d+%\), .* frames/s, ETA \d+:\d\d:\d\d", err)
    assert [int(done) for done in progress] == [9, 17, 25, 33], err
    code = cli_main(["decode", str(path), "-o", str(tmp_path / "quiet.npy"), "--model", str(model_dir), "--no-cache",
                     "--no-progress"])
    assert code == 0 and "batch" not in capsys.readouterr().err


def test_a_decode_that_cannot_fit_in_memory_is_refused_before_it_runs(model_dir, latents, tmp_path, monkeypatch, capsys):
    from torchax_vae.cli import commands
    from torchax_vae.engine import memory

    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)
    monkeypatch.setattr(commands.TorchaxVAE, "decode", lambda *a, **k: pytest.fail("decoded anyway"))
    monkeypatch.setattr(commands.TorchaxVAE, "_decode_call", lambda *a, **k: pytest.fail("decoded anyway"))
    # refused before its programs compile (it took 96 s and 5.5 GB at a released size), and before "auto"
    # tiling's line that it would tile
    monkeypatch.setattr(commands, "_precompile", lambda *a, **k: pytest.fail("compiled anyway"))
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "out.mp4", "--model", model_dir, "--no-cache")
    assert code == 2 and "GB on the device at once, more than the 1e-06 GB available" in lines[0], lines
    # streamed: refused where even one latent frame's chunk (of 4x6 latents, tiny CogVideoX: 1 frame) cannot fit
    assert "decodes in chunks of at least 1 x 1 frames of 32x48" in lines[0], lines


def test_sizes_are_height_by_width_and_shapes_as_written(model_dir, tmp_path, capsys):
    path = tmp_path / "latents.pt"
    torch.save(torch.randn(1, 1, 4, 2, 3), path)  # 2x3 latents: 16 high, 24 wide
    code = cli_main(["decode", str(path), "-o", str(tmp_path / "out.npy"), "--model", str(model_dir), "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0 and "frames 16x24;" in out, out
    assert np.load(tmp_path / "out.npy").shape == (1, 16, 24, 3)


# ----- 6. long decodes: progress that counts finished frames, Ctrl-C at any point (issue 28) -----


def _long_decode(model_dir, tmp_path, *extra):
    """`torchax-vae decode` of 40 latent frames at 64x64 (20 frame batches of the tiny CogVideoX), no terminal."""
    latents = tmp_path / "long.pt"
    torch.save(torch.randn(1, 40, 4, 64, 64, generator=torch.Generator().manual_seed(0)), latents)  # BFCHW
    out = tmp_path / "long.mp4"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "torchax_vae", "decode", str(latents), "-o", str(out),
                             "--model", str(model_dir), "--no-cache", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    return proc, out


def _stderr_lines(proc):
    """(wall time it arrived, line) for each stderr line, as they come."""
    import time

    for line in proc.stderr:
        yield time.time(), line.rstrip("\n")


@by_hand  # out of CI's time (110 s under load): the ETA test above covers the same lines
def test_progress_lines_count_frames_written(model_dir, tmp_path):
    """The 100 % line comes when the frames are done: within 15 % of the decode's time of the output being written."""
    proc, out = _long_decode(model_dir, tmp_path, "--json")
    lines = list(_stderr_lines(proc))
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, lines[-5:]
    hundred = [t for t, line in lines if "frames written (100%)" in line]
    assert len(hundred) == 1, [line for _, line in lines]
    decode_seconds = json.loads(stdout)["decode_seconds"]
    written = out.stat().st_mtime
    assert written - hundred[0] <= 0.15 * decode_seconds, (written - hundred[0], decode_seconds)
    steps = [t for t, line in lines if re.search(r"decode: \d+ of \d+ frames written", line)]
    # a line every tenth, spread over the decode (the 10 % line to the 100 % one: ideally 90 % of it), not a burst
    # as the batches were queued (before: 71 % at 7.2 s of a decode written at 49.5 s)
    assert len(steps) == 10 and steps[-1] - steps[0] >= 0.5 * decode_seconds, (steps, decode_seconds)


@pytest.mark.slow  # 50 s on 2 cores: a subprocess that compiles, then the interrupt
@pytest.mark.heavy  # out of CI's time: the default suite's Ctrl-C tests (one line, exit 130; during start-up) stay
def test_ctrl_c_while_decoding_exits_130_at_once_and_writes_nothing(model_dir, tmp_path):
    import signal

    proc, out = _long_decode(model_dir, tmp_path)
    for _, line in _stderr_lines(proc):
        if "frames written" in line:  # decoding has started (the first tenth is written)
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    # at once: the decode stops where it is (it would go on to write its last nine tenths), not at its end
    assert proc.returncode == 130 and "(100%)" not in rest, (proc.returncode, rest[-500:])
    assert "interrupted; no output written" in rest and "Exception ignored" not in rest
    assert not out.exists() and not list(tmp_path.glob(".long.mp4.*")), sorted(p.name for p in tmp_path.iterdir())


def test_ctrl_c_during_startup_is_not_lost(model_dir, tmp_path):
    import signal
    import time

    proc, out = _long_decode(model_dir, tmp_path)
    time.sleep(1)  # importing torch, JAX and diffusers, loading the model (the test holds wherever it lands)
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    # not lost: the process ends interrupted, and the decode (its "frames written" lines) never ran to its end
    assert proc.returncode == 130 and "(100%)" not in rest, (proc.returncode, rest[-500:])
    assert not out.exists()


def test_a_channel_error_shows_the_shape_as_the_file_holds_it(model_dir, tmp_path, capsys):
    """[B, F, C, H, W] latents whose C is wrong: the message gave the shape transposed ((1, 8, 4, 8, 12))."""
    path = tmp_path / "z.pt"
    torch.save(torch.randn(1, 4, 8, 8, 12), path)
    code, lines = run(capsys, "decode", path, "-o", tmp_path / "v.mp4", "--model", model_dir)
    assert code == 2 and "layout [B, F, C, H, W], shape (1, 4, 8, 8, 12)" in lines[0], lines


def test_a_config_file_as_model_and_an_unmakeable_cache_folder_say_what_they_are(model_dir, latents, tmp_path, capsys):
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", model_dir / "vae" / "config.json")
    assert code == 2 and "is a file; expected the diffusers VAE or pipeline folder" in lines[0], lines
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", "missing/config.json")
    assert code == 2 and "--model missing/config.json does not exist" in lines[0], lines
    code, lines = run(capsys, "decode", latents, "-o", tmp_path / "v.mp4", "--model", model_dir, "--cache-dir", "/proc/x")
    assert code == 2 and "--cache-dir /proc/x: cannot create it" in lines[0], lines


@needs("qwenimage21-tiny")  # a version gate (scripts/vaes.py), never an ImportError
def test_decode_runs_the_familys_latent_checks_as_input_errors(tmp_path, capsys):
    """Qwen-Image 2.1 takes one frame: latents of several went through to an 'unexpected ValueError', exit 1."""
    from torchax_vae.models import input_shape

    vae = random_vae("qwenimage21-tiny")
    vae.save_pretrained(tmp_path / "qwen" / "vae")
    path = tmp_path / "z.pt"
    shape = list(input_shape(vae, "decode", 1, 32, 32))
    shape[2] = 3  # three latent frames
    torch.save(torch.randn(*shape), path)
    code, lines = run(capsys, "decode", path, "-o", tmp_path / "v.npy", "--model", tmp_path / "qwen",
                      "--layout", "BCFHW")
    assert code == 2 and len(lines) == 1, lines


def test_a_full_disk_while_writing_frames_says_the_disk_is_full(tmp_path, monkeypatch):
    """numpy's own words were only '12700800 requested and 65408 written'."""
    import shutil

    def short_write(file, array):
        raise OSError(f"{array.nbytes} requested and 65408 written")

    monkeypatch.setattr(files, "_write_all", short_write)  # the frames' write (files.frame_writer)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
    frames = np.zeros((4, 8, 8, 3), np.uint8)
    with pytest.raises(files.WriteError, match=r"cannot write .*v.npy: the disk is full \(0.0 MB of frames, 0.0 MB free"):
        files.write_frames(tmp_path / "v.npy", frames)
    assert list(tmp_path.iterdir()) == []  # no partial file left

"""Latents and videos on disk: read with clear errors, written atomically.

Every writer goes through `atomic_output`: the data goes to a temporary file
next to the target and is renamed over it only when complete, so a failure
(bad input, a full disk, Ctrl-C) leaves no partial file behind.
"""

import contextlib
import gc
import os
import pathlib
import shutil
import pickle
import re
import subprocess
import tempfile
import warnings

import numpy as np
import torch

from torchax_vae.media.checks import (LATENT_SUFFIXES, MAX_FPS, InputError, WriteError, check_distinct, check_readable,
                     check_writable)

__all__ = [
    "InputError", "WriteError", "check_distinct", "check_writable", "atomic_output", "load_latents", "save_latents", "write_mp4", "frame_writer",
    "write_frames",
]

LAYOUTS = ("BFCHW", "BCFHW")  # stage 2's output_type="latent" gives [B, F, C, H, W]


# The temporary files atomic_output is writing now: what an interrupted command removes before it exits
# (torchax_vae.cli stops on Ctrl-C from a thread, without unwinding the main thread's `finally`s).
_WRITING: set[str] = set()


def discard_partials() -> None:
    """Removes every temporary file an `atomic_output` block of this process is writing (its target is untouched)."""
    for tmp in list(_WRITING):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path in `path`'s folder; renamed to `path` if the block succeeds, removed if not."""
    path = check_writable(path)
    folder = path.parent
    remove_stale_partials(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.{os.getpid()}.", suffix=".partial" + path.suffix)
        os.close(fd)
    except OSError as e:
        raise WriteError(f"cannot write {path}: {e.strerror or e}") from e
    _WRITING.add(tmp)
    try:
        yield pathlib.Path(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, WriteError):  # named after the user's path, not ours
            raise WriteError(f"cannot write {path}: {e.strerror or e}") from e
        raise
    finally:
        _WRITING.discard(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_stale_partials(path) -> list[pathlib.Path]:
    """Removes temporary files of `atomic_output` for `path` whose writing process is gone (killed with -9)."""
    path = pathlib.Path(path)
    removed = []
    for tmp in path.parent.glob(f".{path.name}.*.partial{path.suffix}"):
        pid = tmp.name[len(path.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


def _single_tensor(found: dict, path) -> torch.Tensor:
    if "latents" in found:
        return found["latents"]
    tensors = {k: v for k, v in found.items() if isinstance(v, (torch.Tensor, np.ndarray))}
    if len(tensors) != 1:
        raise InputError(f"{path}: expected one tensor or a 'latents' entry, found keys {sorted(found)}")
    return next(iter(tensors.values()))


def _unpickling_reason(error: Exception) -> str:
    """What torch's weights-only unpickler refused, without its advice and terminal escapes."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    found = re.search(r"WeightsUnpickler error:\s*(.+?)(?: was not an allowed global| Please use|\n|$)", text)
    if found is None:
        return "not a torch tensor file"
    reason = found.group(1).strip().removeprefix("Unsupported global: GLOBAL ")
    if "Unsupported operand" in reason:
        return "not a torch tensor file"
    return f"it holds a {reason}, not tensors only"


# What writes each latents format (the error for a file that is not one names it).
_WRITERS = {".npy": "numpy.save(path, latents)", ".safetensors": "safetensors.torch.save_file({'latents': latents})"}


def load_latents(path, layout: str | None = "BFCHW", packed: bool = False, images: bool = False,
                 audio: bool = False):
    """Latents from .pt/.pth, .safetensors or .npy as a float tensor [B, C, F, H, W].

    `layout` says how the file stores them: "BFCHW" (what the CogVideoX
    pipelines return with output_type="latent"), "BCFHW" (the VAE's own layout,
    and the other families' pipelines'), or None: as stored (see `to_layout`). Only
    5-D, as the VAE's decode takes them: a 4-D array is refused (one video's
    latents are ambiguous between the layouts; save `latents[None]` or the whole
    batch). With `packed`, a 3-D array [B, tokens, channels] (Qwen-Image's
    pipelines pack latents so) is returned as it is, for the family to unpack.

    audio: the file may also hold audio latents, as LTX-2's pipeline returns them with a video's
    (`torch.save((video, audio))`, or a dict with an "audio" or "audio_latents" entry beside "latents" or "video";
    a .safetensors with those keys): returns (video latents, audio latents or None), the audio float and as stored.
    """
    path = pathlib.Path(path)
    if layout is not None and layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    data = _read_latents(path)
    sound = None
    if audio:
        data, sound = _with_audio(data, path)
    if isinstance(data, dict):
        data = _single_tensor(data, path)
    elif isinstance(data, (tuple, list)):  # what `return_dict=False` hands back: (latents,)
        if len(data) != 1 or not isinstance(data[0], torch.Tensor):
            pair = "; a (video, audio) pair is read where the model makes sound (LTX-2, MiniMax H3)" if len(data) == 2 else ""
            raise InputError(f"{path}: expected a tensor or a 1-tuple of one (return_dict=False), "
                             f"found a {type(data).__name__} of {len(data)}{pair}")
        data = data[0]
    video = None if audio and data is None else _as_latents(data, path, layout, packed, images)
    if not audio:
        return video
    return video, None if sound is None else _as_float(sound, path, "audio latents")


def _read_latents(path: pathlib.Path):
    """What a latents file holds: an array, or (a .pt's) a dict, tuple or list, as stored."""
    check_readable(path, "latents file", LATENT_SUFFIXES)
    if path.stat().st_size == 0:
        raise InputError(f"latents file {path} is empty: expected what torch.save, safetensors or numpy.save wrote")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(path)
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:  # not torch.save of tensors; never relay torch's weights_only=False advice
        raise InputError(f"cannot read latents from {path}: {_unpickling_reason(e)}; expected a file written by "
                         "torch.save(latents) (a tensor, a dict of one, or a 1-tuple), e.g. the pipeline output's .frames")
    except Exception as e:  # unreadable, truncated, wrong format: say which file, what it is not, and why
        writer = _WRITERS.get(path.suffix, "torch.save(latents)")
        detail = f"{type(e).__name__}: {str(e).splitlines()[0]}" if str(e).strip() else type(e).__name__
        raise InputError(f"cannot read latents from {path}: not a file {writer} wrote, or a truncated one ({detail})")


def _with_audio(data, path):
    """(the video part, the audio latents or None) of what a latents file holds (`load_latents`' `audio`)."""
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return (data[0],), data[1]
    key = next((key for key in ("audio", "audio_latents") if isinstance(data, dict) and key in data), None)
    if key is not None:  # ("audio_latents": MiniMax H3's modular pipeline state's name)
        rest = {name: value for name, value in data.items() if name != key}
        video = rest.get("latents", rest.get("video"))
        if video is None and len(rest) > 1:
            raise InputError(f"{path}: beside {key!r}, expected one tensor or a 'latents' or 'video' entry, found "
                             f"keys {sorted(rest)}")
        return (video if video is not None else rest or None), data[key]
    return data, None


def _as_float(data, path, what: str) -> torch.Tensor:
    if not isinstance(data, (torch.Tensor, np.ndarray)):
        raise InputError(f"{path}: expected a tensor of {what}, found a {type(data).__name__}")
    tensor = torch.as_tensor(data)
    if not tensor.is_floating_point():
        raise InputError(f"{path}: {what} must be floating point, got {tensor.dtype}")
    return tensor.float().contiguous()


def _as_latents(data, path, layout, packed: bool, images: bool):
    """The video latents of a file, checked (`load_latents`)."""
    tensor = _as_float(data, path, "latents")
    if (packed and tensor.ndim == 3) or (images and tensor.ndim == 4):
        return tensor
    check_rank(tensor, path, 5, layout)
    return to_layout(tensor, layout, "BCFHW").contiguous()


def check_rank(tensor: torch.Tensor, path, rank: int, layout: str | None = None) -> None:
    """InputError unless `tensor` (latents read from `path`) has the rank a VAE's decode takes: 5 (video), 4 (images)."""
    if tensor.ndim == rank:
        return
    if rank == 4:
        raise InputError(f"{path}: latents must be 4-D [B, C, H, W], as this image VAE's decode takes them; got "
                         f"{tensor.ndim}-D with shape {tuple(tensor.shape)}")
    shown = {"BFCHW": "[B, F, C, H, W]", "BCFHW": "[B, C, F, H, W]"}.get(layout, "[B, C, F, H, W] or [B, F, C, H, W]")
    hint = "; for one video's latents save latents[None] (a batch of one)" if tensor.ndim == 4 else ""
    raise InputError(f"{path}: latents must be 5-D {shown}, as the VAE's decode takes them; "
                     f"got {tensor.ndim}-D with shape {tuple(tensor.shape)}{hint}")


def to_layout(tensor: torch.Tensor, layout: str | None, target: str) -> torch.Tensor:
    """5-D latents stored in `layout` as `target` ("BFCHW" or "BCFHW"); None: already in `target`."""
    if layout is None or layout == target:
        return tensor
    return tensor.permute(0, 2, 1, 3, 4)


def save_latents(path, latents: torch.Tensor, layout: str = "BFCHW") -> None:
    """Writes [B, C, F, H, W] latents in `layout` (or images' [B, C, H, W] as "BCHW") to .pt/.pth, .safetensors or
    .npy, atomically."""
    path = check_writable(path, LATENT_SUFFIXES)
    if layout not in LAYOUTS + ("BCHW",) or (layout == "BCHW") != (latents.ndim == 4):
        raise InputError(f"layout must be one of {LAYOUTS} for video latents, BCHW for images; got {layout!r} for "
                         f"shape {tuple(latents.shape)}")
    data = latents.detach().cpu().contiguous()
    if layout == "BFCHW":
        data = data.permute(0, 2, 1, 3, 4).contiguous()
    save_tensor(path, data)


def save_tensor(path, data: torch.Tensor) -> None:
    """Writes a tensor as it is (audio latents: [B, C, L]) to .pt/.pth, .safetensors (as "latents") or .npy,
    atomically; `load_latents` reads it back."""
    path = check_writable(path, LATENT_SUFFIXES)
    data = data.detach().cpu().contiguous()
    with atomic_output(path) as tmp:
        if path.suffix == ".npy":
            with open(tmp, "wb") as f:
                np.save(f, data.float().numpy())
        elif path.suffix == ".safetensors":
            from safetensors.torch import save_file

            save_file({"latents": data}, tmp)
        else:
            torch.save(data, tmp)


@contextlib.contextmanager
def quiet_ffmpeg():
    """Quiet around imageio-ffmpeg's subprocess.

    It starts ffmpeg with fork + exec at once, which JAX warns about (any fork)
    though it is safe; and its generators stop ffmpeg without closing the
    pipes, which warn when freed. Callers drop their generator inside this
    block, so the pipes are freed (and closed) here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        warnings.filterwarnings("ignore", message="unclosed file", category=ResourceWarning)
        yield
        gc.collect()


def _check_frames(frames: np.ndarray, channels=(3,)) -> None:
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] not in channels:
        wanted = " or ".join(f"[F, H, W, {c}]" for c in channels)
        raise InputError(f"frames must be uint8 {wanted}, got {frames.dtype} {frames.shape}")


def write_mp4(path, frames: np.ndarray, fps: float = 8) -> None:
    """uint8 frames [F, H, W, 3] as an H.264 MP4 (lossy: yuv420p, CRF 12), atomically (`frame_writer`)."""
    _check_frames(frames)
    with frame_writer(path, shape=frames.shape, fps=fps) as write:
        write(frames)


def _write_all(f, data: np.ndarray) -> None:
    f.write(data.data)


def mp4_command(tmp, height: int, width: int, fps: float, fragmented: bool = False, audio=None,
                keyframes: str | None = None) -> list[str]:
    """ffmpeg (imageio-ffmpeg's binary) reading raw RGB frames on stdin into an H.264 MP4 (yuv420p, CRF 12);
    fragmented: as fragments a reader can play as they come (written to a pipe: `tmp` "pipe:1"), one per keyframe;
    keyframes: where they are (an ffmpeg `-force_key_frames` expression over the frame number n; `fragment_starts`),
    with x264's lookahead and scene cuts off, so that a fragment goes out as soon as the next keyframe comes;
    audio: a WAV file whose sound goes in as AAC at its own sample rate (torchax_vae/stage3/sound.py), else the MP4
    is silent."""
    import imageio_ffmpeg

    # With sound, the first fragment's moov waits for the AAC encoder's priming (delay_moov), so that players skip
    # it; the track's end cannot be trimmed in a fragmented file: it keeps the last AAC frame's padding (under 1024
    # samples of near silence, docs/guide/serve.md)
    flags = "frag_keyframe+empty_moov+default_base_moof" + ("+delay_moov" if audio is not None else "")
    fragments = ["-movflags", flags] if fragmented else []
    if keyframes is not None:
        fragments += ["-tune", "zerolatency", "-x264-params", "scenecut=0", "-force_key_frames", keyframes]
    sound = ["-i", str(audio), "-map", "0:v:0", "-map", "1:a:0", "-c:a", "aac"] if audio is not None else ["-an"]
    return [
        imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-v", "error", "-hide_banner",
        "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", repr(float(fps)), "-i", "-",
        *sound, "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-crf", "12", *fragments, "-f", "mp4", str(tmp),
    ]


# A streamed MP4's fragments hold at least this many frames (0.5 s at 16 fps): a keyframe per chunk (Wan's are 4
# frames) would bloat the file, and a player buffers a fragment anyway.
MIN_FRAGMENT_FRAMES = 8


def fragment_starts(first: int, step: int, least: int = MIN_FRAGMENT_FRAMES) -> str:
    """The keyframes of a streamed MP4 whose frames come in chunks of `first`, then `step` each: frame 0, then the
    first chunk boundary at least `least` frames on, and every chunk boundary `least` or more frames after the
    last (as an ffmpeg `-force_key_frames` expression: each fragment ends where a chunk does)."""
    if step <= 0:
        return "expr:eq(n,0)"
    cut = first + -(-max(0, least - first) // step) * step  # the first boundary at least `least` frames in
    every = -(-least // step) * step
    return f"expr:eq(n,0)+gte(n,{cut})*eq(mod(n-{cut},{every}),0)"


@contextlib.contextmanager
def frame_writer(path, *, shape, fps: float = 8, audio=None):
    """Writes a video of uint8 frames `shape` = [F, H, W, C] as its frames come: yields `write(frames)`, which
    takes the next frames [n, H, W, C]; the file appears, atomically, once all F are written and the block ends.
    audio: a WAV file to put in an MP4 as its sound (`mp4_command`).

    .npy: the header of the whole array first, then the frames (C 3 or 4; exact). Otherwise an MP4 (C 3):
    ffmpeg reads the frames on its stdin as they come (odd heights or widths padded by one edge pixel, as
    yuv420p needs even); its exit status is checked, and any failure (a full disk, an option it refuses)
    raises WriteError with ffmpeg's own last message. On any error, or fewer frames than F, the target is left
    as it was.
    """
    total, height, width, channels = (int(n) for n in shape)
    written = [0]

    def checked(frames):
        _check_frames(frames, (3, 4) if npy else (3,))
        if tuple(frames.shape[1:]) != (height, width, channels) or written[0] + len(frames) > total:
            raise ValueError(f"frames {frames.shape} do not continue a video of shape {tuple(shape)} "
                             f"({written[0]} frames written)")
        written[0] += len(frames)
        return np.ascontiguousarray(frames)

    def complete():
        if written[0] != total:
            raise WriteError(f"cannot write {path}: {written[0]} of its {total} frames came")

    npy = pathlib.Path(path).suffix.lower() == ".npy"
    if npy and audio is not None:
        raise InputError(f"{path}: an .npy holds the frames alone; write the sound beside it (a .wav) or an .mp4")
    if npy:
        with atomic_output(path) as tmp, open(tmp, "wb") as f:
            header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)), "fortran_order": False,
                      "shape": (total, height, width, channels)}
            np.lib.format.write_array_header_1_0(f, header)

            def write(frames):
                data = checked(frames)
                try:
                    _write_all(f, data)
                except OSError as e:  # a short write says only "N requested and M written"
                    free = shutil.disk_usage(tmp.parent).free
                    if free < data.nbytes:
                        raise WriteError(f"cannot write {path}: the disk is full ({data.nbytes / 1e6:.1f} MB of "
                                         f"frames, {free / 1e6:.1f} MB free in {pathlib.Path(path).parent})") from e
                    raise

            yield write
            complete()
        return
    if not (0 < fps <= MAX_FPS):
        raise InputError(f"fps must be a positive number up to {MAX_FPS}, got {fps}")
    pad_h, pad_w = height % 2, width % 2
    with atomic_output(path) as tmp, quiet_ffmpeg(), tempfile.TemporaryFile() as log:
        # stderr to a file: a chatty ffmpeg cannot block on a full pipe while we write its stdin
        proc = subprocess.Popen(mp4_command(tmp, height + pad_h, width + pad_w, fps, audio=audio), stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=log)
        stopped = [False]

        def write(frames):
            data = checked(frames)
            if pad_h or pad_w:
                data = np.pad(data, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
            if stopped[0]:
                return
            try:
                proc.stdin.write(data.data)
            except BrokenPipeError:
                stopped[0] = True  # ffmpeg stopped reading: its exit status and message say why

        try:
            yield write
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
            status = proc.wait()
        finally:
            if proc.poll() is None:  # interrupted: ffmpeg must not outlive this call
                proc.kill()
                proc.wait()
        if status != 0:
            log.seek(0)
            lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit status {status}"
            raise WriteError(f"cannot write {path}: ffmpeg failed: {reason}")
        complete()


def write_image(path, image: np.ndarray) -> None:
    """uint8 [H, W, 3] (RGB) or [H, W, 4] (RGBA) as a PNG (lossless), atomically."""
    from PIL import Image

    _check_frames(image[None], (3, 4))
    with atomic_output(path) as tmp:
        Image.fromarray(image).save(tmp, format="PNG")


def write_frames(path, frames: np.ndarray) -> None:
    """uint8 frames [F, H, W, 3] (RGB) or [F, H, W, 4] (RGBA) as a .npy file, exactly (the lossless output),
    atomically (`frame_writer`)."""
    _check_frames(frames, (3, 4))
    with frame_writer(path, shape=frames.shape) as write:
        write(frames)

"""Latents and videos on disk: read with clear errors, written atomically.

Every writer goes through `atomic_output`: the data goes to a temporary file
next to the target and is renamed over it only when complete, so a failure
(bad input, a full disk, Ctrl-C) leaves no partial file behind.
"""

import contextlib
import gc
import os
import pathlib
import tempfile
import warnings

import numpy as np
import torch

__all__ = ["InputError", "check_writable", "atomic_output", "load_latents", "save_latents", "write_mp4", "read_video"]

LATENT_SUFFIXES = (".pt", ".pth", ".safetensors", ".npy")
LAYOUTS = ("BFCHW", "BCFHW")  # stage 2's output_type="latent" gives [B, F, C, H, W]


class InputError(ValueError):
    """A user-facing problem with a file or argument; its message is one line saying what and what was expected."""


def check_writable(path) -> pathlib.Path:
    """Raises InputError unless a file can be created at `path` (checked before any long computation)."""
    path = pathlib.Path(path)
    folder = path.parent
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: folder {folder} is not writable")
    return path


@contextlib.contextmanager
def atomic_output(path):
    """Yields a temporary path in `path`'s folder; renamed to `path` if the block succeeds, removed if not."""
    path = check_writable(path)
    folder = path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".partial" + path.suffix)
    os.close(fd)
    try:
        yield pathlib.Path(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _single_tensor(found: dict, path) -> torch.Tensor:
    if "latents" in found:
        return found["latents"]
    tensors = {k: v for k, v in found.items() if isinstance(v, (torch.Tensor, np.ndarray))}
    if len(tensors) != 1:
        raise InputError(f"{path}: expected one tensor or a 'latents' entry, found keys {sorted(found)}")
    return next(iter(tensors.values()))


def load_latents(path, layout: str = "BFCHW") -> torch.Tensor:
    """Latents from .pt/.pth, .safetensors or .npy as a float tensor [B, C, F, H, W].

    `layout` says how the file stores them: "BFCHW" (what CogVideoX pipelines
    return with output_type="latent") or "BCFHW" (the VAE's own layout). A 4-D
    array is taken as one video.
    """
    path = pathlib.Path(path)
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if not path.is_file():
        raise InputError(f"latents file {path} does not exist")
    if path.suffix not in LATENT_SUFFIXES:
        raise InputError(f"latents file {path}: unknown type {path.suffix!r}; expected one of {LATENT_SUFFIXES}")
    try:
        if path.suffix == ".npy":
            data = np.load(path, allow_pickle=False)
        elif path.suffix == ".safetensors":
            from safetensors.torch import load_file

            data = _single_tensor(load_file(path), path)
        else:
            data = torch.load(path, map_location="cpu", weights_only=True)
            if isinstance(data, dict):
                data = _single_tensor(data, path)
    except InputError:
        raise
    except Exception as e:  # unreadable, truncated, wrong format: say which file and why
        raise InputError(f"cannot read latents from {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    tensor = torch.as_tensor(data)
    if not tensor.is_floating_point():
        raise InputError(f"{path}: latents must be floating point, got {tensor.dtype}")
    if tensor.ndim == 4:
        tensor = tensor[None]
    if tensor.ndim != 5:
        raise InputError(f"{path}: latents must be 5-D [B, F, C, H, W] (or 4-D for one video), got shape {tuple(tensor.shape)}")
    if layout == "BFCHW":
        tensor = tensor.permute(0, 2, 1, 3, 4)
    return tensor.float().contiguous()


def save_latents(path, latents: torch.Tensor, layout: str = "BFCHW") -> None:
    """Writes [B, C, F, H, W] latents in `layout` to .pt/.pth, .safetensors or .npy, atomically."""
    path = pathlib.Path(path)
    if path.suffix not in LATENT_SUFFIXES:
        raise InputError(f"output {path}: unknown type {path.suffix!r}; expected one of {LATENT_SUFFIXES}")
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    data = latents.detach().cpu().contiguous()
    if layout == "BFCHW":
        data = data.permute(0, 2, 1, 3, 4).contiguous()
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
def _ffmpeg():
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


def write_mp4(path, frames: np.ndarray, fps: float = 8) -> None:
    """uint8 frames [F, H, W, 3] as an H.264 MP4 (imageio-ffmpeg), atomically.

    H.264 with yuv420p needs even sizes: odd heights or widths are padded by
    one edge pixel (a warning says so).
    """
    import imageio_ffmpeg

    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
        raise InputError(f"frames must be uint8 [F, H, W, 3], got {frames.dtype} {frames.shape}")
    pad_h, pad_w = frames.shape[1] % 2, frames.shape[2] % 2
    if pad_h or pad_w:
        frames = np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    height, width = frames.shape[1:3]
    with atomic_output(path) as tmp, _ffmpeg():
        writer = imageio_ffmpeg.write_frames(
            str(tmp), (width, height), fps=fps, codec="libx264", pix_fmt_out="yuv420p", quality=None,
            output_params=["-crf", "12", "-f", "mp4"], macro_block_size=1, ffmpeg_log_level="error",
        )
        writer.send(None)
        for frame in frames:
            writer.send(np.ascontiguousarray(frame))
        writer.close()
        del writer


def read_video(path, frames: int | None = None) -> tuple[np.ndarray, float]:
    """uint8 frames [F, H, W, 3] and fps from a video file (imageio-ffmpeg); at most `frames` frames."""
    import imageio_ffmpeg

    path = pathlib.Path(path)
    if not path.is_file():
        raise InputError(f"video file {path} does not exist")
    try:
        with _ffmpeg():
            reader = imageio_ffmpeg.read_frames(str(path))
            meta = next(reader)
            width, height = meta["size"]
            out = []
            for raw in reader:
                out.append(np.frombuffer(raw, np.uint8).reshape(height, width, 3))
                if frames is not None and len(out) == frames:
                    break
            reader.close()
            del reader
    except Exception as e:
        raise InputError(f"cannot read video {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if not out:
        raise InputError(f"video {path} has no frames")
    return np.stack(out), float(meta.get("fps", 8))

"""Answers: a decoded tensor (raw, [0, 1] or uint8), a JPEG/PNG image, or an MP4, as the remote-VAE client reads
them. These run in the app's thread pool, never on the device worker, so the device does not wait for encoders.
"""

import io
import json
import pathlib
import tempfile

import numpy as np
import torch

from torchax_vae.media import files, pixels
from torchax_vae.serve.protocol import IMAGE_FORMATS, Output

# Tensor answers name their dtype as the client's DTYPE_MAP does.
DTYPE_NAMES = {torch.float16: "float16", torch.float32: "float32", torch.bfloat16: "bfloat16", torch.uint8: "uint8"}


def tensor_answer(tensor: torch.Tensor) -> tuple[bytes, dict]:
    """(body, headers) of a raw tensor answer: little-endian C-order bytes, with `shape` and `dtype` headers."""
    tensor = tensor.detach().cpu().contiguous()
    body = tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
    return body, {"shape": json.dumps(list(tensor.shape)), "dtype": DTYPE_NAMES[tensor.dtype]}


def _uint8(unit: torch.Tensor) -> torch.Tensor:
    """[0, 1] floats as diffusers' processors round them to uint8."""
    return (unit.float() * 255).round().to(torch.uint8)


def _channels_last(video: torch.Tensor) -> torch.Tensor:
    """[B, C, F, H, W] -> [B, F, H, W, C]; [B, C, H, W] -> [B, H, W, C]."""
    return video.permute(0, 2, 3, 4, 1) if video.ndim == 5 else video.permute(0, 2, 3, 1)


def decode_answer(video: torch.Tensor, output: Output, dtype: torch.dtype, family=None) -> tuple[bytes, dict, str]:
    """(body, headers, media type) answering a decode with `video` ([B, C, F, H, W] or [B, C, H, W]: diffusers' [-1, 1],
    or the family's own pixels, converted as its pipeline does: torchax_vae/media/pixels.py).

    Tensors: "raw" is the decoder's output in the server's dtype; "unit" its [0, 1] values ([F, C, H, W] for one
    video, as the client's processor path permutes it); "uint8" channels last ([F, H, W, C] for one video).
    """
    if output.kind == "tensor":
        if output.values == "raw":
            body, headers = tensor_answer(video.to(dtype))
            return body, headers, "tensor/binary"
        unit = pixels.to_unit(video, family, 1).clamp(0, 1)
        if output.values == "uint8":
            answer = _uint8(_channels_last(unit))
        else:
            answer = unit.permute(0, 2, 1, 3, 4).to(dtype) if unit.ndim == 5 else unit.to(dtype)
        if answer.ndim == 5 and answer.shape[0] == 1:  # one video: its frames are the client's images
            answer = answer[0]
        body, headers = tensor_answer(answer)
        return body, headers, "tensor/binary"
    frames = _uint8(_channels_last(pixels.to_unit(video, family, 1).clamp(0, 1)))[0]  # one image or video (checked)
    frames = frames.numpy()
    if output.kind == "image":
        return encoded_image(frames[0] if frames.ndim == 4 else frames, output.image_format), {}, \
            IMAGE_FORMATS[output.image_format][1]
    return mp4_bytes(frames, output.fps), {}, "video/mp4"


def encoded_image(image: np.ndarray, image_format: str) -> bytes:
    """uint8 [H, W, C] as JPEG (quality 95) or PNG bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    pil_format = IMAGE_FORMATS[image_format][0]
    Image.fromarray(image).save(buffer, format=pil_format, **({"quality": 95} if pil_format == "JPEG" else {}))
    return buffer.getvalue()


def mp4_bytes(frames: np.ndarray, fps: float) -> bytes:
    """uint8 frames [F, H, W, 3] as the MP4 `torchax-vae decode` writes (H.264, CRF 12), in memory."""
    with tempfile.TemporaryDirectory(prefix="torchax-vae-serve-") as folder:
        path = pathlib.Path(folder) / "video.mp4"
        files.write_mp4(path, frames, fps=fps)
        return path.read_bytes()

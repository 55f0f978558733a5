"""The remote-VAE protocol of diffusers' `remote_decode` / `remote_encode` (diffusers/utils/remote_utils.py), read
into jobs for the device worker: every check happens here, before anything reaches the device.

A request that cannot be served raises `RequestError` with its HTTP status and a message saying what was wrong
and what was expected; the app answers it as JSON `{"error": ...}` (docs/guide/serve.md has the protocol table).
"""

import dataclasses
import io
import math

import ml_dtypes
import numpy as np
import torch

from torchax_vae.media import pixels
from torchax_vae.media.checks import InputError, shown
from torchax_vae.stage3.input_checks import check_input, check_output_fits, smallest_output

# The dtypes a request body may hold (the client's DTYPE_MAP, less uint8: latents and images are floats).
TENSOR_DTYPES = {"float16": np.dtype("<f2"), "float32": np.dtype("<f4"), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
OUTPUT_TYPES = ("pt", "pil", "mp4", "frames", "wav")  # frames: streamed uint8 frames (serve/streams.py); wav: sound

IMAGE_FORMATS = {"jpg": ("JPEG", "image/jpeg"), "png": ("PNG", "image/png")}
MAX_RANK = 5
BLOCK = 1 << 20  # values checked at a time


class RequestError(Exception):
    """A request the service refuses: `status` (a 4xx, or 503), the message, and headers for the answer."""

    def __init__(self, status: int, message: str, headers: dict | None = None, reason: str = "bad_request"):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}
        self.reason = reason  # the rejected-requests metric's label


@dataclasses.dataclass(frozen=True)
class Output:
    """What the answer to a decode holds: `kind` "tensor" (raw, [0, 1] or uint8), "image", "mp4" or "frames" (the
    last two streamed as the frames are final: serve/streams.py), or "wav" (sound alone: serve/sounds.py)."""

    kind: str
    values: str = "raw"  # tensor answers: "raw" (the decoder's [-1, 1]), "unit" ([0, 1]) or "uint8"
    image_format: str = "jpg"
    fps: float = 8.0


@dataclasses.dataclass
class Parsed:
    """One request, checked: the tensor the VAE takes, how to batch it, and how to answer."""

    kind: str  # "decode" or "encode"
    tensor: torch.Tensor  # float32, on the host, in the VAE's own layout ([B, C, F, H, W] or [B, C, H, W])
    decode_args: tuple = ()  # LTX's per-video timestep (batch first)
    seed: int | None = None  # decoders that draw noise (LTX): this request's generator; encode: posterior sample
    output: Output | None = None
    scaling: tuple = (None, None, False)  # (scaling_factor, shift_factor, the family's own)
    layout: str = "BCFHW"  # encode: the latents' layout in the answer
    audio: torch.Tensor | None = None  # decode: the audio latents whose sound goes in the MP4 (serve/sounds.py)
    crop: tuple = (0, None)  # sound: the samples [first, stop) of the waveform to answer (serve/sounds.py)


def _flag(params, name: str, default: bool = False) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no", "none"):
        return False
    raise RequestError(400, f"{name} must be True or False, got {shown(value)}")


def _number(params, name: str, kind=float, *, positive: bool = False):
    value = params.get(name)
    if value is None:
        return None
    try:
        number = kind(value)
    except ValueError:
        raise RequestError(400, f"{name} must be a{'n integer' if kind is int else ' number'}, got {shown(value)}") from None
    if not math.isfinite(number) or (positive and number <= 0):
        raise RequestError(400, f"{name} must be a {'positive ' if positive else ''}finite number, got {shown(value)}")
    return number


def shape_of(params, key: str = "shape") -> tuple[int, ...]:
    """The `shape` query parameter (a repeated key, as requests sends a list); or another of its kind (`key`)."""
    values = params.getlist(key)
    if len(values) == 1 and "," in values[0]:  # shape=1,16,13,60,104 from a hand-written URL
        values = values[0].split(",")
    try:
        shape = tuple(int(v) for v in values)
    except ValueError:
        raise RequestError(400, f"{key} must be integers (one {key}= per dimension), got {shown(values)}") from None
    if not shape or len(shape) > MAX_RANK or any(d <= 0 for d in shape):
        raise RequestError(400, f"{key} must be 1 to {MAX_RANK} positive dimensions, got {shown(list(shape))}")
    return shape


def tensor_from_body(params, body: bytes, shape: tuple[int, ...] | None = None) -> torch.Tensor:
    """The raw little-endian C-order tensor of `body`, described by `shape` (the parameter, where not given) and
    `dtype`, as float32; never unpickled."""
    shape = shape or shape_of(params)
    name = params.get("dtype")
    if name not in TENSOR_DTYPES:
        raise RequestError(400, f"dtype must be one of {sorted(TENSOR_DTYPES)}, got {shown(name)}")
    dtype = TENSOR_DTYPES[name]
    expected = math.prod(shape) * dtype.itemsize
    if len(body) != expected:
        raise RequestError(400, f"the body holds {len(body)} bytes; shape {list(shape)} of {name} needs {expected}")
    return tensor_of(body, shape, dtype)


def tensor_of(body, shape: tuple[int, ...], dtype: np.dtype) -> torch.Tensor:
    """`body` (exactly the tensor's bytes) as a float32 tensor; 400 for a NaN or infinite value."""
    # a view of the body's buffer where it holds float32 (no second copy), one float32 copy otherwise
    array = np.frombuffer(body, dtype=dtype).reshape(shape).astype(np.float32, copy=False)
    if not array.flags.writeable:  # an immutable bytes body (a caller's, not the server's buffer)
        array = array.copy()
    flat = array.reshape(-1)
    bad = sum(int(np.size(block) - np.isfinite(block).sum()) for block in np.split(flat, range(BLOCK, flat.size, BLOCK)))
    if bad:  # (counted a block at a time: no temporary the size of the body)
        raise RequestError(400, f"the tensor holds {bad} NaN or infinite values; expected finite numbers")
    return torch.from_numpy(array)


def image_from_body(body: bytes, channels: int, family=None) -> torch.Tensor:
    """An encoded image (PNG, JPEG, ...) as [1, channels, H, W] in [-1, 1] (or the family's own pixels:
    torchax_vae/media/pixels.py), as diffusers' image processor makes it."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(body)) as image:
            image.load()
            image = image.convert("RGBA" if channels == 4 else "RGB")
    except Image.DecompressionBombError as e:
        raise RequestError(413, f"the image is too large to decode: {e}", reason="too_large") from None
    except Exception as e:
        raise RequestError(400, "the body is neither an image PIL can read nor a tensor (a tensor needs the shape "
                                f"and dtype parameters): {type(e).__name__}: {e}") from None
    array = np.asarray(image, dtype=np.float32)

    return pixels.from_uint8(torch.from_numpy(array).permute(2, 0, 1)[None], family, 1)


def _layout(params, vae) -> str:
    layout = params.get("layout") or vae.pipeline_layout
    allowed = ("BCFHW", "BFCHW") if vae.rank == 5 else ("BCHW",)
    if layout not in allowed:
        raise RequestError(400, f"layout must be {' or '.join(allowed)} for {vae.model_class.__name__}, got "
                                f"{shown(layout)}")
    return layout


def _scaling(params, normalized: bool = False) -> tuple:
    """(scaling_factor, shift_factor, whether the model's own normalization applies). The own applies on
    `do_scaling=True` (diffusers' deprecated flag) without factors, or, for a model served as `normalized`, to a
    request with no scaling parameter at all (what `remote_decode(..., do_scaling=False)` sends)."""
    scaling = _number(params, "scaling_factor", positive=True)
    shift = _number(params, "shift_factor")
    asked = _flag(params, "do_scaling", default=normalized)
    own = asked and scaling is None and shift is None
    return scaling, shift, own


def _output(params, headers) -> Output:
    output_type = params.get("output_type", "pil")
    if output_type not in OUTPUT_TYPES:
        raise RequestError(400, f"output_type must be one of {list(OUTPUT_TYPES)}, got {shown(output_type)}")
    image_format = params.get("image_format", "jpg")
    if image_format not in IMAGE_FORMATS:
        raise RequestError(400, f"image_format must be one of {list(IMAGE_FORMATS)}, got {shown(image_format)}")
    fps = _number(params, "fps", positive=True) or 8.0
    partial = _flag(params, "partial_postprocess")
    accept = headers.get("accept", "tensor/binary")
    if output_type in ("mp4", "frames", "wav"):
        return Output(output_type, fps=fps)
    if output_type == "pil" and accept.startswith("image/"):  # no processor on the client: an encoded image
        return Output("image", image_format=image_format)
    if output_type == "pil":  # a processor on the client turns [0, 1] floats into images itself
        return Output("tensor", "unit")
    return Output("tensor", "uint8" if partial else "raw")


def decode_request(vae, params, headers, body: bytes, normalized: bool = False) -> Parsed:
    """A decode request for `vae` (a TorchaxVAE), checked: latents in the VAE's layout, de-normalized as asked."""
    z = tensor_from_body(params, body)
    layout = _layout(params, vae)
    if z.ndim == 3:  # packed latents [B, tokens, channels]: the family's pipeline unpacks them
        height, width = _number(params, "height", int, positive=True), _number(params, "width", int, positive=True)
        if not hasattr(vae, "unpack_latents"):
            raise RequestError(400, f"latents of shape {list(z.shape)} are packed ([B, tokens, channels]); "
                                    f"{vae.model_class.__name__}'s pipelines do not pack latents: send them "
                                    f"{vae.rank}-D")
        if height is None or width is None:
            raise RequestError(400, "packed latents need the height and width of the image they were made for")
        try:
            z = vae.unpack_latents(z, height, width)
        except ValueError as e:
            raise RequestError(400, str(e)) from None
    elif z.ndim == 5 and layout == "BFCHW":
        z = z.permute(0, 2, 1, 3, 4).contiguous()
    _check_channels(vae, z, layout)
    scaling, shift, own = _scaling(params, normalized)
    if own:
        z = vae.denormalize_latents(z)
    else:
        z = z / scaling if scaling is not None else z
        z = z + shift if shift is not None else z
    timestep = _number(params, "decode_timestep")
    noise_scale = _number(params, "decode_noise_scale")
    seed = _number(params, "seed", int) or 0
    try:
        z, decode_args = vae.decode_inputs(z, timestep=timestep, noise_scale=noise_scale, seed=seed)
        _check_input(vae, z, "decode")
    except (InputError, TypeError, ValueError) as e:
        raise RequestError(400, str(e)) from None
    return Parsed("decode", z.contiguous(), tuple(decode_args), seed, _output(params, headers))


def _check_channels(vae, z: torch.Tensor, layout: str) -> None:
    channels = vae.latent_channels
    if z.ndim != vae.rank:
        axes = "[B, F, C, H, W]" if layout == "BFCHW" else "[B, C, F, H, W]" if vae.rank == 5 else "[B, C, H, W]"
        raise RequestError(400, f"latents must be {vae.rank}-D {axes} for {vae.model_class.__name__}; got "
                                f"{z.ndim}-D with shape {list(z.shape)}")
    if z.shape[1] != channels:
        hint = ""
        if z.ndim == 5 and z.shape[2] == channels:
            hint = f"; read as layout={'BCFHW' if layout == 'BFCHW' else 'BFCHW'} they would fit (add that parameter)"
        raise RequestError(400, f"latents have {z.shape[1]} channels (shape {list(z.shape)} read as {layout}); "
                                f"{vae.model_class.__name__}'s decoder takes {channels}{hint}")


def _check_input(vae, x: torch.Tensor, kind: str) -> None:

    check_input(x, vae, kind, f"the {kind} input")


def encode_request(vae, params, headers, body: bytes, normalized: bool = False) -> Parsed:
    """An encode request: an image (PNG/JPEG bytes) or a raw tensor in [-1, 1]; 4-D images become one-frame videos
    for the video families."""
    if params.get("shape") is not None:
        x = tensor_from_body(params, body)
    else:
        x = image_from_body(body, vae.video_channels, vae._family)
    if x.ndim == 4 and vae.rank == 5:  # images [B, C, H, W] as one-frame videos, as the image-to-video pipelines do
        x = x[:, :, None]
    if x.ndim != vae.rank:
        raise RequestError(400, f"an encode input must be images [B, C, H, W]{' or videos [B, C, F, H, W]' if vae.rank == 5 else ''}; "
                                f"got shape {list(x.shape)}")
    try:
        _check_input(vae, x, "encode")
    except InputError as e:
        raise RequestError(400, str(e)) from None
    posterior = params.get("posterior", "mode")
    if posterior not in ("mode", "sample"):
        raise RequestError(400, f"posterior must be 'mode' or 'sample', got {shown(posterior)}")
    seed = (_number(params, "seed", int) or 0) if posterior == "sample" else None
    return Parsed("encode", x.contiguous(), (), seed, None, _scaling(params, normalized), _layout(params, vae))


def scaled_latents(vae, z: torch.Tensor, parsed: Parsed) -> torch.Tensor:
    """Encode's answer: the latents normalized as asked, in the requested layout."""
    scaling, shift, own = parsed.scaling
    if own:
        z = vae.normalize_latents(z)
    else:
        z = z - shift if shift is not None else z
        z = z * scaling if scaling is not None else z
    if z.ndim == 5 and parsed.layout == "BFCHW":
        z = z.permute(0, 2, 1, 3, 4)
    return z.contiguous()


def check_answer(vae, parsed: Parsed) -> None:
    """Refuses, before anything compiles, a decode whose answer cannot be given: one image or MP4 for several
    videos or frames, or an output larger than the device and host can hold (413)."""

    shape = tuple(parsed.tensor.shape)
    smallest = smallest_output(vae, shape)  # [B, C, F, H, W], or images [B, C, H, W]
    output = parsed.output
    if output.kind in ("mp4", "frames") and len(smallest) == 4 and not vae.batch_is_frames:
        raise RequestError(400, f"{vae.model_class.__name__} decodes images, not videos: ask for output_type pil "
                                "or pt")
    if output.kind in ("image", "mp4") and shape[0] != 1 and not vae.batch_is_frames:
        raise RequestError(400, f"output_type {'pil' if output.kind == 'image' else 'mp4'} answers one "
                                f"{'image' if output.kind == 'image' else 'video'}; these latents hold a batch of "
                                f"{shape[0]}: send one per request, or ask for output_type=pt")
    if output.kind == "image" and len(smallest) == 5 and smallest[2] > 1:
        raise RequestError(400, f"these latents decode to a video of at least {smallest[2]} frames; output_type pil "
                                "without a processor answers one image: pass processor=VideoProcessor() (frames as "
                                "[0, 1] floats), or ask for output_type mp4 or pt")
    if output.kind == "mp4" and vae.video_channels != 3:
        raise RequestError(400, f"this model makes {vae.video_channels}-channel frames, which an MP4 cannot hold; "
                                "ask for output_type pt")
    streamed = output.kind in ("mp4", "frames") and len(shape) == 5  # held a chunk at a time: one latent frame's
    try:
        if streamed:
            check_output_fits(smallest_output(vae, (*shape[:2], 1, *shape[3:])), f"latents of shape {list(shape)}",
                              None, streamed=True)
        else:
            check_output_fits(smallest, f"latents of shape {list(shape)}", None)
    except InputError as e:
        raise RequestError(413, str(e), reason="too_large") from None


def check_pixels(vae, parsed: Parsed, cap: int) -> None:
    """Refuses (413) a request whose output (decode: at least `smallest_output`'s) or input (encode) has more
    pixels x frames than `cap` (--max-pixels), before anything compiles."""
    _check_pixels(vae, parsed.kind, tuple(parsed.tensor.shape), cap)


def check_query_pixels(vae, kind: str, params, cap: int) -> None:
    """`check_pixels` from the query alone, before the body is read: for a tensor body of the VAE's own rank (its
    `shape` in the `layout` asked for); packed latents and images are checked once read."""
    if params.get("shape") is None:
        return
    shape = shape_of(params)
    if len(shape) != vae.rank or vae.rank == 3:  # (a sound VAE's latents decode to waveforms: no pixels)
        return
    if len(shape) == 5 and _layout(params, vae) == "BFCHW":
        shape = (shape[0], shape[2], shape[1], *shape[3:])
    if kind == "decode" and shape[1] != vae.latent_channels:
        return  # refused with its own words once read
    _check_pixels(vae, kind, shape, cap)


def check_chunk_pixels(vae, kind: str, shape, cap: int) -> None:
    """`check_pixels` for a tensor of `shape` (a live session's chunk, in the VAE's own layout)."""
    _check_pixels(vae, kind, shape, cap)


def _check_pixels(vae, kind: str, shape, cap: int) -> None:

    video = smallest_output(vae, shape) if kind == "decode" else shape
    batch, frames, (height, width) = video[0], math.prod(video[2:-2]), video[-2:]
    pixels = batch * frames * height * width
    if pixels > cap:
        what = "decodes to at least" if kind == "decode" else "holds"
        raise RequestError(413, f"this request {what} {batch} x {frames} frames of {height}x{width}, {pixels:,} pixels; "
                                f"this server's cap is {cap:,} per request (--max-pixels)", reason="too_large")

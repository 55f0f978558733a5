"""Sound in the service (LTX-2, MiniMax H3): a decode that sends audio latents beside the video's gets an MP4 with their sound,
and one that sends them alone gets the sound (`output_type=wav`, or the waveform as a tensor with `pt`).

The protocol (docs/serve.md): `audio_shape` (repeated, as `shape`) gives the audio latents' shape: [B, C, L, M]
as LTX2Pipeline returns them with `output_type="latent"`, [2B, C, L] as MiniMax H3's modular pipeline holds them
(torchax_vae/sound.py); their bytes follow the video latents' in the body, in
the same `dtype`. Without `shape`, the body holds the audio latents alone. A model has sound where it is served
from a pipeline folder with its family's audio folders (LTX-2: `audio_vae/` and `vocoder/`; MiniMax H3:
`audio_vae/`) and its family makes sound (torchax_vae/sound.py).

The sound is decoded (the audio VAE's program, and LTX-2's vocoder's) on the request's thread, before its video
job queues for the device worker; it is not scheduled in chunks as the video is (docs/limits.md).
"""

import io
import math
import os
import tempfile

import torch

from .. import sound
from ..checks import InputError
from .protocol import TENSOR_DTYPES, Output, Parsed, RequestError, decode_request, shape_of, tensor_of


def asked(params) -> bool:
    """Whether a decode request asks for sound."""
    return params.get("audio_shape") is not None or params.get("output_type") == "wav"


def parse(vae, speaker, name: str, params, headers, body: bytes, normalized: bool) -> Parsed:
    """A decode request with sound for the model `name` (`vae`, its `speaker`: a sound.Sound or None), checked."""
    if speaker is None:
        family = sound.FAMILIES.get(vae.model_class.__name__)
        has = (f"; it is served without it: serve the pipeline folder (with {sound._folders(family)}) rather than "
               "the VAE's" if family else "")
        raise RequestError(400, f"{name} ({vae.model_class.__name__}) decodes no sound{has}; the families with "
                                f"sound: {sound.families()}")
    if params.get("audio_shape") is None:
        raise RequestError(400, "output_type=wav answers the sound of audio latents: send them with audio_shape "
                                "(their shape, one audio_shape= per dimension)")
    audio_shape = shape_of(params, "audio_shape")
    name_of_dtype = params.get("dtype")
    if name_of_dtype not in TENSOR_DTYPES:
        raise RequestError(400, f"dtype must be one of {sorted(TENSOR_DTYPES)}, got {name_of_dtype!r}")
    audio_bytes = math.prod(audio_shape) * TENSOR_DTYPES[name_of_dtype].itemsize
    if len(body) < audio_bytes:
        raise RequestError(400, f"the body holds {len(body)} bytes; the audio latents alone (audio_shape "
                                f"{list(audio_shape)} of {name_of_dtype}) need {audio_bytes}")
    video_body, audio_body = memoryview(body)[: len(body) - audio_bytes], memoryview(body)[len(body) - audio_bytes:]
    audio = tensor_of(audio_body, audio_shape, TENSOR_DTYPES[name_of_dtype])
    if params.get("shape") is None:  # the sound alone
        if len(video_body):
            raise RequestError(400, f"the body holds {len(body)} bytes; audio_shape {list(audio_shape)} of "
                                    f"{name_of_dtype} needs {audio_bytes} (send shape= too for video latents before them)")
        output_type = params.get("output_type", "wav")
        if output_type not in ("wav", "pt"):
            raise RequestError(400, f"audio latents alone answer output_type wav (a 16-bit WAV) or pt (the waveform "
                                    f"[B, channels, samples]), not {output_type}")
        _check(speaker, audio, None)
        if output_type == "wav" and speaker.clips(audio) != 1:
            raise RequestError(400, f"output_type wav answers one clip; these audio latents hold "
                                    f"{speaker.clips(audio)}: send one per request, or ask for output_type=pt")
        return Parsed("sound", audio.contiguous(), output=Output("wav" if output_type == "wav" else "tensor"))
    if params.get("output_type") != "mp4":
        raise RequestError(400, "video latents with audio latents answer an MP4 with sound: ask for output_type=mp4 "
                                "(or send the audio latents alone for their sound)")
    parsed = decode_request(vae, params, headers, bytes(video_body), normalized)
    _check(speaker, audio, parsed.tensor.shape[0])
    parsed.audio = audio.contiguous()
    return parsed


def _check(speaker, audio: torch.Tensor, batch: int | None) -> None:
    try:
        speaker.check(audio, "the request", batch)
    except InputError as e:
        raise RequestError(400, str(e)) from None


def waveform(speaker, audio: torch.Tensor) -> torch.Tensor:
    """The waveform [B, channels, samples] of audio latents (the pipeline's audio stage 3), as float32 on the host."""
    return speaker.waveform(audio).float().cpu()


def answer(speaker, parsed: Parsed) -> tuple[bytes, dict, str]:
    """(body, headers, media type) of a sound-alone decode: a 16-bit WAV of its one clip's sound, or the waveform
    tensor of all its clips."""
    from .outputs import tensor_answer

    wave = waveform(speaker, parsed.tensor)
    if parsed.output.kind == "tensor":
        content, headers = tensor_answer(wave)
        return content, {**headers, "sample_rate": str(speaker.sample_rate)}, "tensor/binary"
    buffer = io.BytesIO()
    sound.write_wav_to(buffer, sound.pcm16(wave)[0], speaker.sample_rate)
    return buffer.getvalue(), {"sample_rate": str(speaker.sample_rate)}, "audio/wav"


def track(speaker, audio: torch.Tensor) -> str:
    """A temporary WAV of one clip's sound, for the MP4's ffmpeg (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="torchax_vae_sound.", suffix=".wav")
    os.close(fd)
    try:
        sound.write_wav_to(path, sound.pcm16(waveform(speaker, audio))[0], speaker.sample_rate)
    except BaseException:
        os.unlink(path)
        raise
    return path

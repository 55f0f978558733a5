"""Sound in the service (LTX-2, MiniMax H3): a decode that sends audio latents beside the video's gets an MP4 with their sound,
and one that sends them alone gets the sound (`output_type=wav`, or the waveform as a tensor with `pt`).

The protocol (docs/guide/serve.md): `audio_shape` (repeated, as `shape`) gives the audio latents' shape: [B, C, L, M]
as LTX2Pipeline returns them with `output_type="latent"`, [2B, C, L] as MiniMax H3's modular pipeline holds them
(torchax_vae/stage3/sound.py); their bytes follow the video latents' in the body, in
the same `dtype`. Without `shape`, the body holds the audio latents alone. A model has sound where it is served
from a pipeline folder with its family's audio folders (LTX-2: `audio_vae/` and `vocoder/`; MiniMax H3:
`audio_vae/`) and its family makes sound (torchax_vae/stage3/sound.py).

The sound is a job of the device worker, as the video's chunks are (the audio VAE's program, and LTX-2's
vocoder's, in one turn: it is not cut into chunks), queued before the video's job. A model served from an audio
pipeline's VAE (Stable Audio's `AutoencoderOobleck`) is its sound alone: `audio_shape` and no `shape`, cropped with
`audio_start` / `audio_end` (seconds) as its pipeline crops it.
"""

import io
import math
import os
import tempfile

import torch

from torchax_vae.media.checks import InputError
from torchax_vae.serve.outputs import tensor_answer
from torchax_vae.serve.protocol import (_number, decode_request, Output, Parsed, RequestError, shape_of,
                                        TENSOR_DTYPES, tensor_of)
from torchax_vae.stage3 import sound
from torchax_vae.stage3.sound import VAESound


def asked(params) -> bool:
    """Whether a decode request asks for sound."""
    return params.get("audio_shape") is not None or params.get("output_type") == "wav"


def check_encode(vae, speaker, name: str) -> None:
    """RequestError for an encode of a model served as its sound alone (Stable Audio's VAE)."""
    if isinstance(speaker, VAESound):
        raise RequestError(400, f"{name} ({vae.model_class.__name__}) is served for its sound: its decode answers "
                                "the waveform of audio latents; the service encodes images and videos")


def parse(vae, speaker, name: str, params, headers, body: bytes, normalized: bool) -> Parsed:
    """A decode request with sound for the model `name` (`vae`, its `speaker`: a sound.Sound or None), checked."""
    alone = isinstance(speaker, VAESound)  # an audio pipeline's VAE (Stable Audio): its sound alone
    if alone and (params.get("audio_shape") is None or params.get("shape") is not None):
        raise RequestError(400, f"{name} ({vae.model_class.__name__}) decodes sound alone, no video: send its "
                                "latents with audio_shape= (one per dimension, [B, C, L]) and no shape=, for "
                                "output_type wav or pt (torchax_vae.serve.client.decode_with_sound(url, audio=z))")
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
        start, end = _number(params, "audio_start"), _number(params, "audio_end")
        try:
            first, stop = sound.crop(speaker, audio, start, end)
        except InputError as e:
            raise RequestError(400, str(e).replace("--audio-start", "audio_start").replace("--audio-end", "audio_end"))
        if output_type == "wav" and speaker.clips(audio) != 1:
            raise RequestError(400, f"output_type wav answers one clip; these audio latents hold "
                                    f"{speaker.clips(audio)}: send one per request, or ask for output_type=pt")
        return Parsed("sound", audio.contiguous(), output=Output("wav" if output_type == "wav" else "tensor"),
                      crop=(first, stop))
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


def job_of(parsed: Parsed) -> Parsed:
    """The device worker's job for the sound of a decode with audio latents (for its MP4's track)."""
    return Parsed("sound", parsed.audio, output=Output("tensor"))


def waveform(speaker, audio: torch.Tensor) -> torch.Tensor:
    """The waveform [B, channels, samples] of audio latents (the pipeline's audio stage 3), as float32 on the host:
    what the device worker runs for a job of kind "sound"."""
    return speaker.waveform(audio).float().cpu()


def answer(speaker, parsed: Parsed, wave: torch.Tensor) -> tuple[bytes, dict, str]:
    """(body, headers, media type) of a sound-alone decode from its waveform: a 16-bit WAV of its one clip's sound,
    or the waveform tensor of all its clips, cropped as asked (`audio_start`, `audio_end`)."""

    first, stop = parsed.crop
    wave = wave[:, :, first:stop]
    if parsed.output.kind == "tensor":
        content, headers = tensor_answer(wave.contiguous())
        return content, {**headers, "sample_rate": str(speaker.sample_rate)}, "tensor/binary"
    buffer = io.BytesIO()
    sound.write_wav_to(buffer, sound.pcm16(wave)[0], speaker.sample_rate)
    return buffer.getvalue(), {"sample_rate": str(speaker.sample_rate)}, "audio/wav"


def track(speaker, wave: torch.Tensor) -> str:
    """A temporary WAV of one clip's sound (its waveform), for the MP4's ffmpeg (the caller removes it)."""
    fd, path = tempfile.mkstemp(prefix="torchax_vae_sound.", suffix=".wav")
    os.close(fd)
    try:
        sound.write_wav_to(path, sound.pcm16(wave)[0], speaker.sample_rate)
    except BaseException:
        os.unlink(path)
        raise
    return path

"""Stage 3 with sound: a video family's audio latents, through its audio VAE (and vocoder) on JAX, into a waveform.

Each family with sound makes it its own way: torchax_vae/stage3/sound_families.py holds one `Sound` class per family
(LTX-2's audio VAE and vocoder, MiniMax H3's mono audio VAE on stereo pairs, Kandinsky 6's MMAudio VAE and
vocoder) and `VAESound` for an audio pipeline whose VAE is its whole sound (Stable Audio, Stable Audio 3, LongCat
audio; `MusicSound`: MiniMax Music 3's vocoder, on one window of latents or the pipeline's windows). This module
loads them from a pipeline folder and writes what they make.

The models are TorchaxVAEs (models/ltx2_audio.py, models/ltx2_vocoder.py,
models/minimax_h3_audio.py, models/mmaudio.py, models/oobleck.py), loaded from the pipeline folder's `audio_vae/`
(and `vocoder/`), as diffusers lays a saved pipeline out. The waveform is
written as diffusers' `encode_video` writes it: clipped to [-1, 1], times
32767, as int16 (mono duplicated to stereo), then AAC at the model's sample
rate in the MP4 (files.mp4_command), or a 16-bit WAV.
"""

import pathlib
import wave

import numpy as np
import torch

from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media import files
from torchax_vae.media.checks import vae_subfolder
from torchax_vae.media.files import atomic_output, InputError
from torchax_vae.stage3.loading import load_vae
from torchax_vae.stage3.sound_families import (  # noqa: F401 (their home before sound_families.py)
    AUDIO_ONLY, DECODE_ONLY, FAMILIES, WITH_SOUND, Kandinsky6Sound, LTX2Sound, MiniMaxH3Sound, MusicSound, Sound,
    SoundFamily, VAESound, _folders, audio_only, families)

__all__ = ["AUDIO_ONLY", "WITH_SOUND", "Sound", "pcm16", "write_wav"]

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}  # the command's --dtype


def saved_class(model: str, subfolder: str = "vae") -> str | None:
    """The `_class_name` of a pipeline folder's (or cached hub id's) `subfolder` model, or None where it has none."""
    from diffusers import AutoencoderKL

    try:  # (any diffusers model class reads any config.json)
        return AutoencoderKL.load_config(str(model), subfolder=vae_subfolder(model, subfolder)).get("_class_name")
    except Exception:  # no such folder or config: the loaders say what is missing
        return None


def pcm16(waveform: torch.Tensor) -> np.ndarray:
    """int16 samples [B, samples, 2] of a waveform [B, channels, samples], as diffusers' `encode_video` makes them."""
    if waveform.shape[1] == 1:  # mono is written as stereo, the channel duplicated
        waveform = waveform.repeat(1, 2, 1)
    if waveform.shape[1] != 2:
        raise ValueError(f"expected a mono or stereo waveform [B, 1 or 2, samples], got {tuple(waveform.shape)}")
    samples = (torch.clip(waveform.detach().float().cpu(), -1.0, 1.0) * 32767.0).to(torch.int16)
    return samples.transpose(1, 2).contiguous().numpy()


def write_wav(path, pcm: np.ndarray, sample_rate: int) -> None:
    """16-bit PCM samples [samples, channels] as a WAV file, atomically."""
    with atomic_output(path) as tmp:
        write_wav_to(tmp, pcm, sample_rate)


def write_wav_to(path, pcm: np.ndarray, sample_rate: int) -> None:
    """`write_wav`, to `path` as it is (or a file object)."""
    with wave.open(path if hasattr(path, "write") else str(path), "wb") as f:
        f.setnchannels(pcm.shape[1])
        f.setsampwidth(2)
        f.setframerate(int(sample_rate))
        f.writeframes(np.ascontiguousarray(pcm, dtype="<i2").tobytes())


def read_wav(path) -> tuple[np.ndarray, int]:
    """(int16 samples [samples, channels], sample rate) of a 16-bit WAV file (a path or a file object)."""
    with wave.open(path if hasattr(path, "read") else str(path), "rb") as f:
        data = np.frombuffer(f.readframes(f.getnframes()), dtype="<i2")
        return data.reshape(-1, f.getnchannels()), f.getframerate()


def load(model: str, video_class: str | None = None, dtype: torch.dtype | None = None, mesh=None) -> Sound:
    """The sound of a pipeline folder (or hub id) `model`: its audio VAE (and vocoder) as TorchaxVAEs in `dtype`
    (None: the checkpoint's) on `mesh` (None: one device), for a video VAE of `video_class` (None: the family whose
    audio VAE is there); InputError where it has none."""

    expected = FAMILIES[video_class] if video_class else None
    _check_folders(model, expected)
    audio_vae = load_vae(model, "audio_vae")
    family = next((f for f in FAMILIES.values() if type(audio_vae).__name__ in f.classes[0]), None)
    if family is None or (expected is not None and family is not expected):
        want = " or ".join(expected.classes[0]) if expected else "the audio VAE of a family with sound"
        raise InputError(f"{model}: its audio_vae/ holds a {type(audio_vae).__name__}, not {want}; sound is decoded "
                         f"for {families()}")
    _check_folders(model, family)
    others = [load_vae(model, name) for name in family.subfolders[1:]]
    for name, loaded, classes in zip(family.subfolders[1:], others, family.classes[1:]):
        if type(loaded).__name__ not in classes:
            raise InputError(f"{model}: its {name}/ holds a {type(loaded).__name__}, not {' or '.join(classes)} "
                             f"({family.name}'s sound)")
    return family.make(*(TorchaxVAE(loaded, dtype=dtype, mesh=mesh) for loaded in [audio_vae, *others]))


def _check_folders(model: str, family: SoundFamily | None) -> None:
    """InputError where a local pipeline folder lacks the folders of `family`'s sound (None: an audio_vae/)."""
    local = pathlib.Path(model).expanduser()
    names = family.subfolders if family else ("audio_vae",)
    lacking = [name for name in names if local.is_dir() and not (local / name / "config.json").is_file()]
    if lacking:
        whose = (f"{family.name}'s sound needs a pipeline folder with {_folders(family)}" if family else
                 "sound needs a pipeline folder with its audio VAE in audio_vae/")
        raise InputError(f"model folder {model} has no {' or '.join(f'{name}/' for name in lacking)}: {whose}, as "
                         "its pipelines save")


def has_sound(model, vae) -> bool:
    """Whether a pipeline folder `model`, whose VAE is `vae`, has sound to decode beside it (a family with sound,
    and that family's audio folders there)."""
    local = pathlib.Path(str(model)).expanduser()
    family = FAMILIES.get(type(vae).__name__)
    return family is not None and local.is_dir() and \
        all((local / name / "config.json").is_file() for name in family.subfolders)


def wav_paths(out: pathlib.Path, batch: int) -> list[pathlib.Path]:
    """One WAV per clip: `out` for one, out_0.wav, out_1.wav, ... for more (as the videos)."""
    return [out] if batch == 1 else [out.with_name(f"{out.stem}_{i}{out.suffix}") for i in range(batch)]


def read(latents: str, audio_latents: str | None):
    """(video latents or None, audio latents or None) of the command's input files (files.load_latents)."""

    z, audio = files.load_latents(latents, None, packed=True, images=True, audio=True)
    if audio_latents is not None:
        if audio is not None:
            raise InputError(f"{latents} holds audio latents already; --audio-latents is for video latents saved "
                             "alone")
        audio = files.load_latents(audio_latents, None, images=True)
    return z, audio


def read_windows(path):
    """Latents that a vocoder takes window by window (MiniMax Music 3's): one tensor [B, C, L], or the pipeline's
    windows, `latent_chunks` (a list of them, or a dict with that entry), as float tensors."""

    path = pathlib.Path(path)
    data = files._read_latents(path)
    if isinstance(data, dict):
        data = data.get("latent_chunks", data)
        if isinstance(data, dict):
            data = files._single_tensor(data, path)
    windows = list(data) if isinstance(data, (tuple, list)) else [data]
    if not windows:
        raise InputError(f"{path}: an empty list of windows; expected the pipeline's latent_chunks (one or more "
                         "tensors [B, C, L]) or one tensor")
    out = [files._as_float(window, path, "latents") for window in windows]
    return out if isinstance(data, (tuple, list)) else out[0]


def for_video(ours, model: str, dtype: str, audio, audio_out, where: str, batch: int, out) -> "Sound | None":
    """The sound to decode beside a video of `ours` written to `out` (InputError, before anything compiles, where it
    cannot be), or None for a silent video."""
    if audio is None:
        if audio_out is not None:
            raise InputError(f"--audio-out: {where} holds no audio latents; save the pipeline's (video, audio) pair, "
                             "or give --audio-latents")
        return None
    name = ours.model_class.__name__
    if name not in WITH_SOUND:
        raise InputError(f"{where}: audio latents given, but a {name} makes video without sound; the families "
                         f"with sound: {families()}")
    if pathlib.Path(out).suffix.lower() == ".npy" and audio_out is None:
        raise InputError(f"{out}: an .npy holds the frames alone; give --audio-out NAME.wav for the sound of {where}, "
                         "or write an .mp4")
    speaker = load(model, name, _DTYPES[dtype])
    speaker.check(audio, where, batch)
    return speaker


def sound_only(latents: str, audio_latents: str | None, out: pathlib.Path, model: str, dtype: str,
               start: float | None = None, end: float | None = None) -> dict:
    """`torchax-vae decode ... -o NAME.wav`: the sound of the audio latents alone, one 16-bit WAV per clip; `start`
    and `end` (seconds) crop it as Stable Audio's pipeline crops its output (`audio_start_in_s`, `audio_end_in_s`)."""
    import time

    speaker = load_audio_only(model, _DTYPES[dtype])
    if isinstance(speaker, MusicSound):  # MiniMax Music 3: one window's latents, or the pipeline's latent_chunks
        if audio_latents is not None:
            raise InputError(f"--audio-latents: {model} is MiniMax Music 3's vocoder; give its latents (a window's, "
                             "or the pipeline's latent_chunks) as the latents file")
        z, audio = None, read_windows(latents)
    else:
        z, audio = read(latents, audio_latents)
    if audio is None and z is not None and z.ndim in (3, 4):  # the audio latents saved alone
        audio = z
    if audio is None:
        raise InputError(f"{out}: a .wav is the sound of audio latents, and {latents} holds none (LTX2Pipeline's "
                         "output_type='latent' returns them beside the video's, as MiniMax H3's modular pipeline "
                         "holds its audio_latents, and StableAudioPipeline's are its audios)")
    speaker = speaker or load(model, None, _DTYPES[dtype])
    speaker.check(audio, f"audio latents in {audio_latents or latents}")
    first, stop = crop(speaker, audio, start, end)
    paths = wav_paths(out, speaker.clips(audio))
    for path in paths:
        files.check_writable(path)
        files.check_distinct(path, [latents, *([audio_latents] if audio_latents else [])])
    begin = time.perf_counter()
    pcm = pcm16(speaker.waveform(audio)[:, :, first:stop])
    seconds = time.perf_counter() - begin
    for path, clip in zip(paths, pcm):
        write_wav(path, clip, speaker.sample_rate)
    return {"outputs": [str(p) for p in paths], "clips": len(paths), "samples": pcm.shape[1],
            "sample_rate": speaker.sample_rate, "audio_seconds": pcm.shape[1] / speaker.sample_rate,
            "decode_seconds": seconds}


def load_audio_only(model: str, dtype: torch.dtype | None = None, mesh=None) -> "VAESound | None":
    """The sound of a pipeline folder whose own VAE decodes sound alone (`AUDIO_ONLY`), or None for others."""

    if saved_class(model) not in AUDIO_ONLY:
        return None
    return audio_only(TorchaxVAE(load_vae(model), dtype=dtype, mesh=mesh))


def crop(speaker: Sound, audio: torch.Tensor, start: float | None, end: float | None) -> tuple[int, int | None]:
    """The samples [first, stop) of the decoded sound that seconds `start` to `end` keep, as Stable Audio's
    pipeline computes them (`int(seconds * sampling_rate)`); InputError, before anything compiles, for a range
    outside the decoded sound."""
    if start is None and end is None:
        return 0, None
    if not isinstance(speaker, VAESound):
        raise InputError(f"--audio-start and --audio-end crop the sound of an audio pipeline's VAE "
                         f"({', '.join(f'{name} ({cls})' for cls, name in AUDIO_ONLY.items())}), as its pipeline "
                         "crops it; the sound of a video is written whole, as its pipeline writes it")
    samples = speaker.samples(audio)
    length = samples / speaker.sample_rate
    start = 0.0 if start is None else start
    end = length if end is None else end
    if not 0 <= start < end <= length:
        raise InputError(f"--audio-start {start:g} and --audio-end {end:g} (seconds) must satisfy 0 <= start < end "
                         f"<= {length:g}, the length these audio latents decode to ({samples} samples at "
                         f"{speaker.sample_rate} Hz)")
    return int(start * speaker.sample_rate), int(end * speaker.sample_rate)


def tracks(speaker: Sound, audio, stack, wavs) -> tuple[list[pathlib.Path], dict]:
    """The sound of each clip as a temporary WAV for its MP4 (removed when `stack` closes), and in `wavs` (the
    --audio-out files, renamed into place only when `stack` closes without an error, with the videos); and
    what it measured."""
    import tempfile
    import time

    start = time.perf_counter()
    pcm = pcm16(speaker.waveform(audio))
    seconds = time.perf_counter() - start
    folder = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="torchax_vae_sound.")))
    temporary = [folder / f"{i}.wav" for i in range(len(pcm))]
    for path, clip in zip(temporary, pcm):
        write_wav_to(path, clip, speaker.sample_rate)
    for path, clip in zip(wavs, pcm):
        write_wav_to(stack.enter_context(atomic_output(path)), clip, speaker.sample_rate)
    return temporary, {"sample_rate": speaker.sample_rate, "audio_seconds": pcm.shape[1] / speaker.sample_rate,
                       "audio_decode_seconds": seconds}

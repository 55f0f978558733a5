"""`torchax-vae encode clip.wav -o latents.pt --model PIPE`: a sound file into the latents of an audio pipeline's VAE
(Stable Audio's `AutoencoderOobleck`, Stable Audio 3's `AutoencoderSAME`, LongCat's `LongCatAudioDiTVae`), as its
pipeline holds them, so that `torchax-vae decode latents.pt -o clip.wav` turns them back into sound.

- **Reading.** The same ffmpeg that writes our MP4s (imageio-ffmpeg) decodes any sound file it knows into 32-bit PCM
  at the file's own channel count; 16-bit samples come out as sample / 32768, as soundfile and torchaudio read them.
  ffmpeg resamples only where the file's rate is not the model's, and the result says so (`resampled_from`).
- **A video** with sound gives its sound track; one without is refused ("has no sound track").
- **Channels** as StableAudioPipeline matches a reference waveform to its VAE: mono repeated to stereo, stereo
  averaged to mono; other counts are refused.
- **Latents** in the pipeline's layout (`pipeline_layout`: [B, C, L], LongCat's [B, L, C]): the posterior's mean
  (`--posterior sample`: a draw from the call's `--seed`), scaled as the family's pipelines scale them (these three
  hand the VAE's latents over as they are).

The whole waveform is read into host memory (a minute of 44.1 kHz stereo is 21 MB); the encode itself is tiled in
time where the class tiles (Oobleck's 30 s windows).
"""

import pathlib
import subprocess
import tempfile
import struct
import time

import numpy as np
import torch

from torchax_vae.cli.frame_progress import precompile_counting as _precompile
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media import files
from torchax_vae.media.checks import SOUND_SUFFIXES
from torchax_vae.media.files import InputError, quiet_ffmpeg
from torchax_vae.stage3 import sound
from torchax_vae.stage3.input_checks import check_video_shape
from torchax_vae.stage3.loading import load_vae

__all__ = ["SOUND_SUFFIXES", "encode_file", "read_sound"]



def is_sound_file(path) -> bool:
    return pathlib.Path(path).suffix.lower() in SOUND_SUFFIXES


def _pcm32(path: pathlib.Path, sample_rate: int | None) -> tuple[np.ndarray, int]:
    """(float32 samples [channels, samples] in [-1, 1], their rate) of `path`'s first sound stream, through ffmpeg
    (resampled to `sample_rate` where given)."""
    import imageio_ffmpeg

    with tempfile.TemporaryDirectory() as folder:
        pcm = pathlib.Path(folder) / "sound.wav"
        command = [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-nostdin", "-i", str(path), "-map", "0:a:0",
                   "-c:a", "pcm_s32le", *(["-ar", str(sample_rate)] if sample_rate else []), str(pcm)]
        with quiet_ffmpeg():
            proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode or not pcm.exists():
            if "matches no streams" in proc.stderr:  # a video without a sound track, an image
                raise InputError(f"{path} has no sound track (expected a sound file, or a video with sound)")
            reason = (proc.stderr.strip().splitlines() or ["ffmpeg failed"])[-1]
            raise InputError(f"cannot read sound from {path}: {reason} (expected a sound file ffmpeg reads, e.g. "
                             f"{', '.join(SOUND_SUFFIXES)})")
        channels, rate, data = _riff_pcm32(pcm.read_bytes())
    samples = data.reshape(-1, channels).T.astype(np.float64) / 2.0**31
    return samples.astype(np.float32), rate


def _riff_pcm32(riff: bytes) -> tuple[int, int, np.ndarray]:
    """(channels, rate, int32 samples) of the 32-bit PCM WAV ffmpeg wrote (WAVE_FORMAT_EXTENSIBLE, which Python
    3.11's `wave` does not read): its "fmt " and "data" chunks."""
    chunks, at = {}, 12
    while at + 8 <= len(riff):
        name, size = riff[at:at + 4], struct.unpack_from("<I", riff, at + 4)[0]
        chunks[name] = riff[at + 8:at + 8 + size]
        at += 8 + size + (size & 1)
    _, channels, rate = struct.unpack_from("<HHI", chunks[b"fmt "])
    return channels, rate, np.frombuffer(chunks[b"data"], dtype="<i4")


def read_sound(path, sample_rate: int, channels: int) -> tuple[torch.Tensor, int]:
    """(waveform [1, channels, samples] float32 at `sample_rate`, the file's own rate) of a sound file, its channels
    matched as StableAudioPipeline matches a reference waveform's (mono repeated, stereo averaged)."""
    path = files.check_readable(path, "sound file")
    if path.stat().st_size == 0:
        raise InputError(f"sound file {path} is empty")
    samples, rate = _pcm32(path, None)
    source_rate = rate
    if rate != sample_rate:
        samples, rate = _pcm32(path, sample_rate)
    waveform = torch.from_numpy(samples)[None]
    if waveform.shape[1] == 1 and channels == 2:
        waveform = waveform.repeat(1, 2, 1)
    elif waveform.shape[1] == 2 and channels == 1:
        waveform = waveform.mean(1, keepdim=True)
    if waveform.shape[1] != channels:
        raise InputError(f"sound file {path} has {waveform.shape[1]} channels; this VAE encodes {channels} (mono "
                         "and stereo are matched to it, as its pipeline matches them)")
    if not waveform.shape[2]:
        raise InputError(f"sound file {path} holds no samples")
    return waveform, source_rate


def encode_file(path: str, out, model: str, *, subfolder: str | None = "vae", dtype: str = "fp32",
                tiling: bool = False, posterior: str = "mean", seed: int = 0, progress=None) -> dict:
    """A sound file -> an audio pipeline's latents, written to `out` (.pt, .safetensors or .npy)."""

    if posterior not in ("mean", "sample"):
        raise InputError(f"posterior must be 'mean' or 'sample', got {posterior!r}")
    out = files.check_writable(out, files.LATENT_SUFFIXES)
    files.check_distinct(out, [path])
    ours = TorchaxVAE(load_vae(model, subfolder), dtype=sound._DTYPES[dtype])
    name = ours.model_class.__name__
    if name not in sound.AUDIO_ONLY:
        raise InputError(f"{path} is a sound file, and a {name} encodes video or images; the VAEs that encode sound "
                         f"files: {', '.join(f'{cls} ({pipe})' for cls, pipe in sound.AUDIO_ONLY.items())}")
    if name in sound.DECODE_ONLY:
        encoders = ", ".join(f"{cls} ({pipe})" for cls, pipe in sound.AUDIO_ONLY.items() if cls not in sound.DECODE_ONLY)
        raise InputError(f"{name} ({sound.AUDIO_ONLY[name]}) decodes latents and encodes nothing (diffusers has no "
                         f"encoder for its latents); the VAEs that encode sound files: {encoders}")
    if tiling:  # Oobleck's windows in time; the others have none, as diffusers' classes
        try:
            ours.enable_tiling()
        except NotImplementedError as e:
            raise InputError(f"--tiling: {e}") from None
    speaker = sound.VAESound(ours)
    x, source_rate = read_sound(path, speaker.sample_rate, ours.video_channels)
    check_video_shape(tuple(x.shape), ours, f"sound file {path}")
    compile_seconds, _, stats = _precompile(ours, "encode", tuple(x.shape), progress)
    start = time.perf_counter()
    dist = ours._posterior(x.to(ours.dtype))
    z = dist.mode() if posterior == "mean" else dist.sample(generator=torch.Generator().manual_seed(seed))
    z = ours.normalize_latents(z.float())
    encode_seconds = time.perf_counter() - start
    if ours.pipeline_layout == "BTC":  # LongCat's pipeline holds [B, L, C]
        z = z.transpose(1, 2)
    files.save_tensor(out, z.contiguous())
    return {"output": str(out), "samples": x.shape[2], "sample_rate": speaker.sample_rate,
            "audio_seconds": x.shape[2] / speaker.sample_rate,
            "resampled_from": None if source_rate == speaker.sample_rate else source_rate,
            "latent_shape": list(z.shape), "layout": ours.pipeline_layout if ours.pipeline_layout == "BTC" else "BCT",
            "programs": len(stats), "compile_seconds": compile_seconds, "encode_seconds": encode_seconds}

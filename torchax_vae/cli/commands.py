"""What `torchax-vae` does, as functions: decode latents to MP4, encode a video, the demo, warm-up.

Each returns a dict of what it measured (the command line prints it). Problems
with files, shapes or models raise `files.InputError` before anything compiles.
"""

import contextlib
import math
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

from torchax_vae.cli import sound_encode, streamed_encode
from torchax_vae.cli.frame_progress import batches_finished, frames_written, progress_mode
from torchax_vae.cli.frame_progress import precompile_counting as _precompile
from torchax_vae.engine.convert import on_device as _on_device
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media import files, pixels, video_input
from torchax_vae.media.checks import IMAGE_SUFFIXES, VIDEO_SUFFIXES
from torchax_vae.media.files import InputError
from torchax_vae.media.pixels import video_to_uint8 as _to_uint8
from torchax_vae.stage3 import image_files, inpainting, sound
from torchax_vae.stage3.input_checks import check_input, check_output_fits, check_video_shape, smallest_output
from torchax_vae.stage3.input_checks import unpacked_latents as _unpacked
from torchax_vae.stage3.loading import check_served, load_vae

__all__ = ["load_vae", "decode_file", "encode_file", "psnr"]



def psnr(reference: np.ndarray, test: np.ndarray, peak: float = 2.0) -> float:
    """dB between two signals of the same shape; peak 2 for [-1, 1] video."""
    mse = float(np.mean((np.asarray(test, np.float64) - np.asarray(reference, np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(peak**2 / mse)


def _frames_second(ours, video):
    """A decoded video (or its shape) as [B, C, F, H, W], from the family's `decoded_layout`."""
    if ours.decoded_layout == "BCFHW":
        return video
    if isinstance(video, tuple):
        return (video[0], video[2], video[1], *video[3:])
    return jnp.transpose(video, (0, 2, 1, 3, 4))


# A run estimated past this many seconds (from its first frame batch) is announced with its estimate (an output's
# size: input_checks.LARGE_OUTPUT_BYTES).
LONG_RUN_SECONDS = 600


def _outputs(out: pathlib.Path, batch: int) -> list[pathlib.Path]:
    """One path per video: out itself for one, out_0.mp4, out_1.mp4, ... for more."""
    if batch == 1:
        return [out]
    return [out.with_name(f"{out.stem}_{i}{out.suffix}") for i in range(batch)]


def _counting(mode):
    """`frame_progress.batches_finished` with this command's mode: (vae, calls, what, frames) -> its context."""
    return lambda vae, total, desc, frames: batches_finished(total, desc, mode, frames, LONG_RUN_SECONDS)


def _make_vae(vae, dtype: str, tiling: bool) -> TorchaxVAE:
    ours = TorchaxVAE(vae, dtype={"fp32": torch.float32, "bf16": torch.bfloat16}[dtype])
    if tiling:
        ours.enable_tiling()
    return ours


def decode_file(
    latents: str, out: str, model: str, *, subfolder: str | None = "vae", dtype: str = "fp32",
    tiling: bool = False, fps: float = 8, layout: str | None = None, progress="bar", size=None,
    decode_timestep: float | None = None, decode_noise_scale: float | None = None, seed: int = 0,
    audio_latents: str | None = None, audio_out: str | None = None, audio_start: float | None = None,
    audio_end: float | None = None, image: str | None = None, mask: str | None = None,
) -> dict:
    """Stage 3: latents saved by stage 2 -> one video per batch element, decoded by TorchaxVAE.

    `out` ending in .mp4: H.264 (yuv420p, CRF 12: lossy); in .npy: the exact
    uint8 frames [F, H, W, 3] the pipeline's video processor would give (lossless).
    progress: "bar" (a terminal), "log" (a line every tenth of the batches, with an ETA) or None.
    size: (height, width) of the images packed latents were made for (Qwen-Image's [B, tokens, C x 4]).
    layout: how the file stores 5-D latents, "BFCHW" or "BCFHW"; by default the family's pipelines' layout
    (`pipeline_layout`: CogVideoX's is BFCHW, the others' BCFHW).
    decode_timestep, decode_noise_scale, seed: for timestep-conditioned decoders (LTX-Video 0.9.1 on), as the
    pipeline's arguments of those names and its generator's seed (`TorchaxVAE.decode_inputs`).
    Sound (torchax_vae/stage3/sound.py): audio latents beside the video's in `latents` (LTX-2's (video, audio) pair,
    MiniMax H3's `latents` and `audio_latents`) or
    in `audio_latents` go into the MP4 as AAC, and to `audio_out` (.wav) where given; `out` ending in .wav
    writes the sound alone (Stable Audio's latents, whose VAE decodes sound alone, cropped to `audio_start` to
    `audio_end` seconds where given, as its pipeline crops them).
    image, mask: the files SD inpainting's asymmetric VAE conditions its decoder on (torchax_vae/stage3/inpainting.py).
    """
    mode = progress_mode(progress)
    out = files.check_writable(out, VIDEO_SUFFIXES + IMAGE_SUFFIXES[:1] + (".wav",))
    inputs = [latents, *([audio_latents] if audio_latents else [])]
    files.check_distinct(out, inputs)
    if out.suffix.lower() == ".wav":
        return sound.sound_only(latents, audio_latents, out, model, dtype, audio_start, audio_end)
    if audio_start is not None or audio_end is not None:
        raise InputError(f"{out}: --audio-start and --audio-end crop the sound written alone, to a .wav (Stable "
                         "Audio's, as its pipeline crops it)")
    z, audio_z = sound.read(latents, audio_latents)  # as stored: the layout depends on the family
    if z is None:
        raise InputError(f"{latents} holds audio latents alone: write their sound with -o NAME.wav")
    paths = _outputs(out, z.shape[0])
    wavs = [] if audio_out is None else sound.wav_paths(files.check_writable(audio_out, (".wav",)), z.shape[0])
    for path in paths + wavs:
        files.check_writable(path)
        files.check_distinct(path, inputs + [p for p in paths + wavs if p is not path])
    vae = load_vae(model, subfolder)
    check_served(vae)
    ours = _make_vae(vae, dtype, tiling)
    speaker = sound.for_video(ours, model, dtype, audio_z, audio_out, f"latents in {audio_latents or latents}",
                              z.shape[0], out)
    image_files.check_output(out, ours.rank, ours.model_class.__name__, ours.batch_is_frames)
    inpainting.check(ours, image, mask)
    if ours.rank == 4:  # an image VAE (AutoencoderKL): PNG files; Stable Video Diffusion's frames: one video
        if ours.batch_is_frames and out.suffix.lower() != ".png":
            paths = [out]
        return image_files.decode(ours, z, latents, paths, size=size, progress=_counting(mode), fps=fps,
                                  precompile=lambda *a: _precompile(*a, mode), image=image, mask=mask, seed=seed)
    if z.ndim == 4:
        files.check_rank(z, latents, 5, layout or ours.pipeline_layout)
    if ours.video_channels != 3 and out.suffix.lower() != ".npy":
        raise InputError(f"{out}: this model makes {ours.video_channels}-channel images (RGBA), which an "
                         f"{out.suffix} file cannot hold; write .npy (uint8 [F, H, W, {ours.video_channels}])")
    layout = layout or ours.pipeline_layout
    stored_shape = tuple(z.shape)  # as in the file, in `layout`
    z = _unpacked(ours, z, size, latents, layout) if z.ndim == 3 else files.to_layout(z, layout, "BCFHW").contiguous()
    channels = ours.latent_channels
    if z.shape[1] != channels:
        shown = "[B, F, C, H, W]" if layout == "BFCHW" else "[B, C, F, H, W]"
        other = "BCFHW" if layout == "BFCHW" else "BFCHW"
        fix = (f"read as --layout {other} they would fit" if z.ndim == 5 and z.shape[2] == channels else
               f"they are another VAE's latents: check --model ({ours.model_class.__name__} here)")
        raise InputError(f"{latents}: latents have {z.shape[1]} channels (layout {shown}, shape {stored_shape}); "
                         f"this model's decoder takes {channels}: {fix}")
    z = ours.denormalize_latents(z)  # as the family's pipelines do before decoding
    try:  # the timestep and its noise, where the family's decoder takes them (before anything compiles)
        z, decode_args = ours.decode_inputs(z, timestep=decode_timestep, noise_scale=decode_noise_scale, seed=seed)
    except ValueError as e:
        raise InputError(str(e)) from None
    check_input(z, ours, "decode", f"latents in {latents}")
    # streamed: the device and the host hold a few chunks, never the whole video. Refused before anything
    # compiles (in seconds, not after its programs compile) where even one latent frame's output cannot fit
    one_frame = (*z.shape[:2], 1, *z.shape[3:])
    check_output_fits(smallest_output(ours, one_frame), f"latents in {latents}", None, streamed=True)
    compile_seconds, _, stats = _precompile(ours, "decode", tuple(z.shape), mode)
    video_shape = _frames_second(ours, ours.output_shape("decode", tuple(z.shape)))  # compiled already: shapes only
    batch, channels, total, height, width = video_shape
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:  # every output appears, atomically, once all its frames are written
        tracks = [None] * len(paths)
        if speaker is not None:  # the sound first (one program each: the audio VAE's, LTX-2's vocoder's), as WAVs
            tracks, heard = sound.tracks(speaker, audio_z, stack, wavs)
        mp4 = out.suffix.lower() == ".mp4"  # (an .npy holds the frames alone: its sound goes to audio_out)
        writers = [stack.enter_context(files.frame_writer(path, shape=(total, height, width, channels), fps=fps,
                                                          audio=track if mp4 else None))
                   for path, track in zip(paths, tracks)]
        with frames_written(total, "decode", mode, LONG_RUN_SECONDS) as wrote:
            # a decoder that injects noise (LTX-Video 0.9.1, LTX-2) draws it from this call's generator
            noise = {"generator": torch.Generator().manual_seed(seed)} if ours.decode_draws_noise else {}
            chunks = stack.enter_context(ours.decode_stream(_on_device(z, ours.dtype), *decode_args, **noise))
            for chunk in chunks:  # frames leave the device as they are final, and go to ffmpeg at once
                frames = np.asarray(jax.device_get(_to_uint8(_frames_second(ours, chunk._elem), ours._family)))
                for write, clip in zip(writers, frames):
                    write(clip)
                wrote(frames.shape[1])
    decode_seconds = time.perf_counter() - start
    return {
        "outputs": [str(p) for p in paths],
        "videos": batch,
        "frames": total,
        "size": f"{height}x{width}",  # height x width, as everywhere
        "programs": len(stats),
        "compile_seconds": compile_seconds,
        "decode_seconds": decode_seconds,
        "frames_per_second": batch * total / decode_seconds,
        **({"audio_outputs": [str(p) for p in wavs], **heard} if speaker is not None else {}),
    }


def encode_file(
    video: str, out: str, model: str, *, subfolder: str | None = "vae", dtype: str = "fp32", tiling: bool = False,
    layout: str | None = None, posterior: str = "mean", seed: int = 0, max_frames: int | None = None,
    progress="bar",
) -> dict:
    """A video file -> normalized latents as stage 2 would hold them (in the family's `pipeline_layout` by default);
    a sound file (or any input of an audio pipeline's VAE) -> its latents (torchax_vae/cli/sound_encode.py)."""
    if posterior not in ("mean", "sample"):
        raise InputError(f"posterior must be 'mean' or 'sample', got {posterior!r}")
    mode = progress_mode(progress)
    if sound_encode.is_sound_file(video) or sound.saved_class(model, subfolder or "vae") in sound.AUDIO_ONLY:
        for given, flag in ((layout, "--layout"), (max_frames, "--frames")):
            if given is not None:
                raise InputError(f"{flag} is for videos; {video} is encoded as sound (its latents are written in "
                                 "its pipeline's layout)")
        return sound_encode.encode_file(video, out, model, subfolder=subfolder, dtype=dtype, tiling=tiling,
                                        posterior=posterior, seed=seed, progress=mode)
    out = files.check_writable(out, files.LATENT_SUFFIXES)
    files.check_distinct(out, [video])
    video_input.check_video_file(video)  # before the model loads; read once its channels are known
    vae = load_vae(model, subfolder)
    check_served(vae)
    ours = _make_vae(vae, dtype, tiling)
    if ours.rank == 4:  # an image VAE (AutoencoderKL): the file's first image
        z, summary = image_files.encode(ours, video, precompile=lambda *a: _precompile(*a, mode),
                                        progress=_counting(mode), posterior=posterior, seed=seed)
        files.save_latents(out, z, "BCHW")
        return {"output": str(out), **summary}
    # RGB, or RGBA for a 4-channel VAE (Qwen-Image 2.1); [1, C, F, H, W] in [-1, 1]
    channels = 4 if ours.video_channels == 4 else 3
    with video_input.video_frames(video, channels) as (fps, each):
        first = next(each, None)
    if first is None:
        raise InputError(f"video {video} has no frames")
    count = video_input.count_frames(video)
    count = min(count, max_frames) if max_frames else count
    shape = (1, ours.video_channels, count, *first.shape[:2])
    check_video_shape(shape, ours, f"video {video}")
    compile_seconds, batches, stats = _precompile(ours, "encode", shape, mode)
    streamed = streamed_encode.streams(ours, stats)
    start = time.perf_counter()
    with batches_finished(batches, "encode", mode, count, LONG_RUN_SECONDS):
        if streamed:  # a range of frames at a time, as the encoder's loop takes them
            dist = ours.posterior_class(streamed_encode.moments(ours, video, count, channels))
        else:
            frames, fps = video_input.read_video(video, max_frames, channels=channels)
            count = frames.shape[0]  # as read (the count above is ffmpeg's)
            x = pixels.from_uint8(torch.from_numpy(frames).permute(3, 0, 1, 2)[None], ours._family, 1)
            dist = ours._posterior(x.to(ours.dtype))
        z = dist.mode() if posterior == "mean" else dist.sample(generator=torch.Generator().manual_seed(seed))
    encode_seconds = time.perf_counter() - start
    z = ours.normalize_latents(z.float())  # as the family's video-to-video pipeline normalizes them
    layout = layout or ours.pipeline_layout
    files.save_latents(out, z, layout)
    return {
        "output": str(out),
        "frames": count,
        "fps": fps,
        "streamed": streamed,
        "latent_shape": list(z.shape if layout == "BCFHW" else z.permute(0, 2, 1, 3, 4).shape),  # as written
        "layout": layout,
        "programs": len(stats),
        "compile_seconds": compile_seconds,
        "encode_seconds": encode_seconds,
        "frames_per_second": count / encode_seconds,
    }

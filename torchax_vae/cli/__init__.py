"""The `torchax-vae` command (also `python -m torchax_vae`): a thin layer over `torchax_vae.cli.commands`.

Exit status 0 on success; 2 on bad input (one line on stderr; `--debug` shows
the traceback); 1 when writing the output failed or on anything unexpected
(one line); 130 on Ctrl-C. Arguments and input files are checked here, with the
standard library only, before torch, JAX and diffusers are imported (seconds),
so mistakes come back at once.
"""

import argparse
import contextlib
import json
import logging
import os
import pathlib
import signal
import sys
import threading

from torchax_vae import FAMILIES, __version__, quiet_diffusers_import
from torchax_vae.stage3 import arguments
from torchax_vae.stage3.arguments import PLUGIN_HELP
from torchax_vae.media.checks import (IMAGE_SUFFIXES, LATENT_SUFFIXES, MAX_FPS, SOUND_SUFFIXES, VIDEO_SUFFIXES, InputError, WriteError,
                     check_distinct, check_readable, check_writable, vae_subfolder)

__all__ = ["main"]


def _model_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--model", required=required,
                   help=f"a {', '.join(dict.fromkeys(FAMILIES.values()))} checkpoint: local folder or hub id (cached); the VAE class "
                        "is read from its config")
    p.add_argument("--subfolder", default="vae", help="the VAE's folder inside --model (default: vae)")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="compute dtype (default: fp32)")
    p.add_argument("--tiling", action="store_true",
                   help="force spatial tiling (default: tile only when the untiled programs would not fit in memory)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE:FAMILY", help=PLUGIN_HELP)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-dir", default=None, help="persistent compilation cache folder "
                   "(default: $TORCHAX_VAE_CACHE_DIR, else ~/.cache/torchax_vae/jax)")
    p.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines with an ETA (otherwise)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="torchax-vae",
        description=f"diffusers VAEs ({', '.join(dict.fromkeys(FAMILIES.values()))}) on JAX through torchax. Stage 3 of a text-to-video "
                    "or text-to-image pipeline: decode the latents a pipeline saved (output_type='latent') into a "
                    "video or images.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="{decode,encode,demo,warmup,plan,serve}")

    p = sub.add_parser("decode", help="stage 3: latents from stage 2 -> MP4")
    p.add_argument("latents", help=".pt, .safetensors or .npy, as the family's pipeline with output_type='latent' returns them")
    p.add_argument("-o", "--output", required=True,
                   help="NAME.mp4 (H.264, lossy) or NAME.npy (the exact uint8 frames [F, H, W, 3], lossless); "
                        "batch > 1: NAME_0.mp4, NAME_1.mp4, ...; NAME.wav: the sound alone (LTX-2)")
    _model_args(p)
    p.add_argument("--fps", type=arguments.fps, default=8.0, help=f"frames per second of the MP4, up to {MAX_FPS} (default: 8)")
    p.add_argument("--layout", choices=("BFCHW", "BCFHW"), default=None,
                   help="how the file stores the latents (default: as the family's pipelines return them: "
                        "CogVideoX BFCHW, the others BCFHW)")
    p.add_argument("--size", type=arguments.size, default=None,
                   help="HEIGHTxWIDTH of the image or video that packed latents [B, tokens, channels] were made "
                        "for (output_type='latent'): Qwen-Image's pipelines pack 2x2 latent patches (channels C*4), "
                        "Qwen-Image 2.1's and LTX-Video's one token per latent pixel (and frame) (channels C)")
    p.add_argument("--decode-timestep", type=float, default=None,
                   help="timestep-conditioned decoders (LTX-Video 0.9.1 and later): the timestep, as the "
                        "pipeline's decode_timestep (default there: 0.0)")
    p.add_argument("--decode-noise-scale", type=float, default=None,
                   help="with --decode-timestep: how much noise is mixed into the latents first, as the "
                        "pipeline's decode_noise_scale (default: the timestep)")
    p.add_argument("--seed", type=int, default=0,
                   help="decoders that draw noise (LTX-Video 0.9.1 and later, the consistency decoder): the seed "
                        "of their generator")
    p.add_argument("--audio-latents", default=None, metavar="FILE",
                   help="sound (LTX-2, MiniMax H3): the audio latents, where LATENTS holds the video's alone (a "
                        "(video, audio) pair in LATENTS is read without it); decoded by the pipeline folder's "
                        "audio_vae/ (and vocoder/) into the MP4's AAC track")
    p.add_argument("--audio-out", default=None, metavar="NAME.wav",
                   help="sound: also write the sound as a 16-bit WAV (-o NAME.wav writes it alone; Stable Audio's "
                        "latents decode to it)")
    p.add_argument("--image", default=None, metavar="FILE",
                   help="SD inpainting's asymmetric VAE (AsymmetricAutoencoderKL): the image the pipeline inpainted, "
                        "which its decoder is conditioned on (with --mask)")
    p.add_argument("--mask", default=None, metavar="FILE",
                   help="... and its mask (white: repainted), preprocessed as the pipeline's mask processor does")
    p.add_argument("--audio-start", type=float, default=None, metavar="SECONDS",
                   help="-o NAME.wav of Stable Audio's latents: crop the sound from here, as its pipeline's "
                        "audio_start_in_s (default 0)")
    p.add_argument("--audio-end", type=float, default=None, metavar="SECONDS",
                   help="... and to here, as its pipeline's audio_end_in_s (default: all the latents decode to)")
    _common(p)

    p = sub.add_parser("encode", help="video -> latents (scaled, as the pipelines hold them)")
    p.add_argument("video", help="any video ffmpeg reads, or a sound file for an audio pipeline's VAE (Stable Audio)")
    p.add_argument("-o", "--output", required=True, help=".pt, .safetensors or .npy to write")
    _model_args(p)
    p.add_argument("--layout", choices=("BFCHW", "BCFHW"), default=None,
                   help="layout to write (default: the family's pipelines': CogVideoX BFCHW, the others BCFHW)")
    p.add_argument("--posterior", choices=("mean", "sample"), default="mean", help="latents to keep (default: mean)")
    p.add_argument("--seed", type=int, default=0, help="for --posterior sample")
    p.add_argument("--frames", type=arguments.positive(int), default=None, help="read at most this many frames")
    _common(p)

    p = sub.add_parser("demo", help="offline: the shipped tiny VAE reconstructs a synthetic clip")
    p.add_argument("-o", "--output", default="torchax_vae_demo.mp4", help="side-by-side MP4 (default: %(default)s)")
    p.add_argument("--save-models", default=None, metavar="DIR",
                   help="instead: write tiny random-weight model folders (Wan, an SD image VAE, LTX-2 with its sound, the "
                        "demo's CogVideoX) into DIR, to try the command, the service and sessions offline "
                        "(docs/guide/offline.md)")
    _common(p)

    p = sub.add_parser("warmup", help="compile ahead of time into the persistent cache")
    _model_args(p)
    p.add_argument("--shape", type=arguments.shape, required=True, help="video FRAMES,HEIGHT,WIDTH, e.g. 49,480,720")
    p.add_argument("--kind", choices=("decode", "encode", "both"), default="decode")
    p.add_argument("--batch", type=arguments.positive(int), default=1)
    _common(p)

    p = sub.add_parser("plan", help="compile offline for a TPU or GPU (no accelerator needed): memory per chip, "
                                    "fits or not, sharding efficiency, FLOPs, compile seconds")
    p.add_argument("--model", required=True,
                   help="a VAE's config.json, a VAE or pipeline folder, or a hub id: only the config is read")
    p.add_argument("--subfolder", default="vae", help="the VAE's folder inside --model (default: vae)")
    p.add_argument("--target", required=True,
                   help="v6e-8, v6e-4, v6e-1, v5e-8, v5e-4, v5p-8, v4-8, a libtpu topology (v6e:2x4), h100, h100x2, h100x8, h200")
    p.add_argument("--kind", choices=("decode", "encode"), default="decode")
    p.add_argument("--shape", type=arguments.plan_shape, required=True,
                   help="B,C,F,H,W of the encode or decode input, or a video's FRAMES,HEIGHT,WIDTH")
    p.add_argument("--dp", type=arguments.positive(int), default=1, help="the mesh's 'dp' rows (default: 1, all devices on 'tp')")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="bf16", help="compute dtype (default: bf16)")
    p.add_argument("--tiling", action="store_true", help="force spatial tiling (default: tile only if it would not fit)")
    p.add_argument("--no-progress", action="store_true", help="no line per program while compiling")
    p.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    p.add_argument("--verbose", action="store_true", help="also one line per compiled program")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    from torchax_vae.serve import server  # (stdlib-only at import: its parser, beside the command's)

    server.add_parser(sub)
    return top


def _local_model(model: str) -> bool:
    """Whether --model names a local path (a hub id is ORG/NAME: one slash, no leading ./, / or ~, no file suffix)."""
    return (model.startswith((".", "/", "~")) or model.count("/") != 1 or os.path.exists(model)
            or model.lower().endswith(".json"))


def _check_model_folder(model: str, subfolder: str | None) -> None:
    folder = pathlib.Path(model).expanduser()
    if folder.is_file():
        raise InputError(f"--model {model} is a file; expected the diffusers VAE or pipeline folder that holds "
                         f"its config.json ({folder.parent})" + (": only plan reads a config.json alone"
                                                                 if folder.suffix == ".json" else ""))
    if not folder.is_dir():
        raise InputError(f"--model {model} does not exist: expected a diffusers VAE or pipeline folder, or a "
                         "hub id (ORG/NAME)")
    subfolder = vae_subfolder(folder, subfolder)  # (a Kandinsky pipeline's movq/)
    if not any((folder / name / "config.json").is_file() for name in (subfolder or "", "")):
        raise InputError(f"model folder {model} has no {subfolder or '.'}/config.json: not a diffusers VAE or pipeline")


def preflight(args) -> None:
    """Every check that needs no model: input files, outputs, the model folder, the cache folder (InputError)."""
    if args.command == "decode":
        inputs = [args.latents, *([args.audio_latents] if args.audio_latents else [])]
        for path in inputs:
            check_readable(path, "latents file", LATENT_SUFFIXES)
        for path, what in ((args.image, "--image file"), (args.mask, "--mask file")):
            if path is not None:
                check_readable(path, what)
        check_writable(args.output, VIDEO_SUFFIXES + IMAGE_SUFFIXES[:1] + (".wav",))  # .png: an image VAE's
        check_distinct(args.output, inputs)
        if args.audio_out:
            check_writable(args.audio_out, (".wav",))
            check_distinct(args.audio_out, inputs + [args.output])
    elif args.command == "encode":
        check_readable(args.video, "sound file" if args.video.lower().endswith(SOUND_SUFFIXES) else "video file")
        check_writable(args.output, LATENT_SUFFIXES)
        check_distinct(args.output, [args.video])
    elif args.command == "demo" and args.save_models:
        if pathlib.Path(args.save_models).expanduser().is_file():
            raise InputError(f"--save-models {args.save_models} is a file; give a folder to write the models into")
    elif args.command == "demo":
        check_writable(args.output, (".mp4",))
    elif args.command == "plan":
        from torchax_vae.plan.targets import TargetError, target  # (stdlib until a target's devices are asked for)

        try:
            target(args.target)
        except TargetError as e:
            raise InputError(str(e)) from None
    model = getattr(args, "model", None)
    models = [path for _, path, _ in model] if args.command == "serve" else [model] if model else []
    for model in models:
        if _local_model(model) and not (args.command == "plan" and pathlib.Path(model).is_file()):
            _check_model_folder(model, getattr(args, "subfolder", "vae"))
    if getattr(args, "cache_dir", None) and not args.no_cache:
        for part in (pathlib.Path(args.cache_dir).expanduser(), *pathlib.Path(args.cache_dir).expanduser().parents):
            if part.exists():
                if not part.is_dir():
                    raise InputError(f"--cache-dir {args.cache_dir}: {part} is a file, not a folder")
                break


def _run(args) -> dict:
    preflight(args)
    if args.command == "serve":  # runs until SIGTERM or Ctrl-C, which it handles itself (serve/server.py)
        from torchax_vae.serve import server  # (its own heavy imports come in `run`)

        return {"status": server.run(args)}
    if args.command == "plan":  # compiles for abstract devices: no backend of this machine is needed or held
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        from torchax_vae.cli import ahead_commands  # (torch, JAX: after the checks)

        return ahead_commands.plan(args.model, args.shape, target=args.target, kind=args.kind, subfolder=args.subfolder or None,
                             dtype=args.dtype, tiling=args.tiling, dp=args.dp, progress=not args.no_progress,
                             verbose=args.verbose)
    # a bar on a terminal; in a log (stderr not a terminal), a line every tenth of the batches with an ETA
    progress = None if args.no_progress else "bar" if sys.stderr.isatty() else "log"
    if progress == "bar":  # the imports and the model take seconds before the progress bar appears
        print("loading torch, JAX and the model ...", file=sys.stderr, flush=True)
    # torch, JAX and diffusers load here, after every check that needs none of them (`preflight`)
    from torchax_vae import cache
    from torchax_vae.cli import ahead_commands, commands
    from torchax_vae.engine import process
    from torchax_vae.stage3.loading import load_plugins

    process.start()  # before any JAX device query: a machine without an accelerator stays quiet
    load_plugins(getattr(args, "plugin", ()))
    folder = cache.resolve(args.cache_dir, args.no_cache)
    try:
        cache.enable(folder)
    except OSError as e:
        where = "--cache-dir" if args.cache_dir else f"the cache folder ({cache.ENV} or the default)"
        raise InputError(f"{where} {folder}: cannot create it ({e.strerror or e}); give a writable folder, "
                         "or --no-cache") from None
    if args.command == "decode":
        return commands.decode_file(
            args.latents, args.output, args.model, subfolder=args.subfolder or None, dtype=args.dtype,
            tiling=args.tiling, fps=args.fps, layout=args.layout, progress=progress, size=args.size,
            decode_timestep=args.decode_timestep, decode_noise_scale=args.decode_noise_scale, seed=args.seed,
            audio_latents=args.audio_latents, audio_out=args.audio_out, audio_start=args.audio_start,
            audio_end=args.audio_end, image=args.image, mask=args.mask,
        )
    if args.command == "encode":
        return commands.encode_file(
            args.video, args.output, args.model, subfolder=args.subfolder or None, dtype=args.dtype,
            tiling=args.tiling, layout=args.layout, posterior=args.posterior, seed=args.seed,
            max_frames=args.frames, progress=progress,
        )
    if args.command == "demo" and args.save_models:
        from torchax_vae.cli.tiny_models import save_models  # (the tiny models: only when asked for)

        return {"saved": save_models(args.save_models)}
    if args.command == "demo":
        from torchax_vae.cli.demo import demo  # (the demo's model: only for the demo)

        return demo(args.output, progress=progress)
    kinds = ("decode", "encode") if args.kind == "both" else (args.kind,)
    return ahead_commands.warmup(args.model, args.shape, subfolder=args.subfolder or None, dtype=args.dtype,
                           tiling=args.tiling, kinds=kinds, batch=args.batch)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _report(command: str, result: dict) -> str:
    if command == "decode" and "images" in result:  # an image VAE's
        return (f"wrote {', '.join(result['outputs'])}: {_count(result['images'], 'image')} {result['size']}; "
                f"compile {result['compile_seconds']:.1f} s ({_count(result['programs'], 'program')}), "
                f"decode {result['decode_seconds']:.1f} s, {result['images_per_second']:.2f} images/s")
    if command == "encode" and "sample_rate" in result:  # a sound file's
        resampled = f", resampled by ffmpeg from {result['resampled_from']} Hz" if result["resampled_from"] else ""
        return (f"wrote {result['output']}: latents {result['latent_shape']} ({result['layout']}) from "
                f"{result['audio_seconds']:.2f} s of sound at {result['sample_rate']} Hz{resampled}; compile "
                f"{result['compile_seconds']:.1f} s, encode {result['encode_seconds']:.1f} s")
    if command == "encode" and "frames" not in result:
        return (f"wrote {result['output']}: latents {result['latent_shape']} ({result['layout']}) from a "
                f"{result['size']} image; compile {result['compile_seconds']:.1f} s, encode "
                f"{result['encode_seconds']:.1f} s")
    if command == "decode" and "clips" in result:  # the sound alone
        return (f"wrote {', '.join(result['outputs'])}: {_count(result['clips'], 'clip')} of "
                f"{result['audio_seconds']:.2f} s at {result['sample_rate']} Hz; decode {result['decode_seconds']:.1f} s")
    if command == "decode":
        sound = (f", with {result['audio_seconds']:.2f} s of sound at {result['sample_rate']} Hz"
                 f"{' (also ' + ', '.join(result['audio_outputs']) + ')' if result['audio_outputs'] else ''}"
                 if "sample_rate" in result else "")
        return (f"wrote {', '.join(result['outputs'])}: {result['videos']} x {result['frames']} frames "
                f"{result['size']}{sound}; compile {result['compile_seconds']:.1f} s "
                f"({_count(result['programs'], 'program')}), decode {result['decode_seconds']:.1f} s, "
                f"{result['frames_per_second']:.2f} frames/s")
    if command == "encode":
        return (f"wrote {result['output']}: latents {result['latent_shape']} ({result['layout']}) from {result['frames']} frames; "
                f"compile {result['compile_seconds']:.1f} s, encode {result['encode_seconds']:.1f} s, "
                f"{result['frames_per_second']:.2f} frames/s")
    if command == "plan":
        return result["summary"]
    if command == "demo" and "saved" in result:
        return "wrote " + ", ".join(f"{name}: {path}" for name, path in result["saved"].items())
    if command == "demo":
        return (f"wrote {result['output']} (input | reconstruction, {result['clip']}); "
                f"PSNR {result['psnr_db']:.2f} dB; max |Δ| vs the same model in PyTorch "
                f"{result['max_abs_vs_pytorch']:.2e}; compile {result['compile_seconds']:.1f} s, "
                f"run {result['run_seconds']:.1f} s")
    return "; ".join(f"{kind}: {_count(r['programs'], 'program')} for input {r['input_shape']} in {r['seconds']:.1f} s"
                     for kind, r in result.items())


@contextlib.contextmanager
def _stopping_on_ctrl_c(command: str):
    """Inside: Ctrl-C ends the command at once, wherever it is, with status 130 and no output file.

    Python raises KeyboardInterrupt only between bytecodes, so it waits out a compile or a device wait (C++
    code: a long decode queued on the device ended only when all of it had run), and JAX's gc callback
    swallows one raised inside it. Here the signal's byte reaches a watcher thread through
    `signal.set_wakeup_fd` at once, even while the main thread is in C++. The watcher removes the files
    being written (files.discard_partials; targets are replaced atomically, so none is half-written) and
    ends the process. Outside the main thread (nothing to install) the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)  # the watcher acts, not Python

    def watch():
        while data := os.read(read, 64):  # b"": the block ended and closed the pipe
            if signal.SIGINT in data:
                # not imported yet, or still being imported (a Ctrl-C during start-up): nothing is being written
                discard = getattr(sys.modules.get("torchax_vae.media.files"), "discard_partials", None)
                if discard is not None:
                    discard()
                print(f"torchax-vae {command}: interrupted; no output written", file=sys.stderr, flush=True)
                os._exit(130)

    watcher = threading.Thread(target=watch, name="torchax-vae-ctrl-c", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write)
        watcher.join(timeout=5)
        os.close(read)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")

    try:
        serving = args.command == "serve"  # its own Ctrl-C: finish what was accepted (serve/server.py)
        with contextlib.nullcontext() if args.debug or serving else _stopping_on_ctrl_c(args.command):
            with quiet_diffusers_import():
                result = _run(args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        # serve: uvicorn re-raises the Ctrl-C it drained on (serve/server.py)
        done = "stopped after answering every accepted request" if args.command == "serve" else "interrupted; no output written"
        print(f"torchax-vae {args.command}: {done}", file=sys.stderr)
        return 130
    except (InputError, FileNotFoundError, PermissionError, NotADirectoryError) as e:
        if args.debug:
            raise
        print(f"torchax-vae {args.command}: error: {e}", file=sys.stderr)
        return 2
    except WriteError as e:
        if args.debug:
            raise
        print(f"torchax-vae {args.command}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug or an environment problem, not the input: say so, keep it short
        if args.debug:
            raise
        print(f"torchax-vae {args.command}: unexpected {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
              "(run again with --debug for the traceback)", file=sys.stderr)
        return 1
    if args.command == "serve":
        return result["status"]
    try:
        print(json.dumps(result) if args.json else _report(args.command, result), flush=True)
    except BrokenPipeError:  # `... | head`: the reader has gone; nothing more to say, and no traceback at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())

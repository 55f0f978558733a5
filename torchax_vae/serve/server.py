"""`torchax-vae serve`: the app on uvicorn, with a shutdown that loses nothing.

On SIGTERM (or Ctrl-C) readiness turns 503 and new requests are answered 503 while every accepted request is
finished and answered; then uvicorn's own graceful shutdown runs and the process ends (by the signal, as
uvicorn re-raises it). A second signal ends it at once: one line naming the requests it cuts off (by id), no
traceback, and the signal's exit status.
"""

import argparse
import ctypes
import logging
import os
import pathlib
import signal
import sys
import threading
import time

from torchax_vae.media.checks import InputError, shown
from torchax_vae.serve.limits import DEFAULT_MAX_PIXELS, Limits

DEFAULT_PORT = 8000
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
KEEP_ALIVE_SECONDS = 5


LATENTS = ("raw", "normalized")  # how a model's requests without scaling parameters carry latents


def _named_model(text: str) -> tuple[str, str, str | None]:
    """NAME=PATH[:raw|:normalized] -> (name, path, latents or None for --latents's)."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH[:normalized] (a model folder or hub id), got {shown(text)}")
    head, colon, tail = path.rpartition(":")
    if colon and tail in LATENTS and head:
        return name, head, tail
    return name, path, None


def _warmup(text: str) -> tuple[str | None, str, tuple[int, ...]]:
    """[NAME:]KIND:B,C,F,H,W (or B,C,H,W): a shape to compile before the server is ready."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[-2] not in ("decode", "encode"):
        raise argparse.ArgumentTypeError(f"expected [NAME:]decode:B,C,F,H,W or [NAME:]encode:B,C,F,H,W, got {text!r}")
    try:
        shape = tuple(int(v) for v in parts[-1].split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"the shape of {text!r} must be integers, e.g. 1,16,13,60,104") from None
    if len(shape) not in (4, 5) or min(shape) <= 0:
        raise argparse.ArgumentTypeError(f"the shape of {text!r} must be 4 or 5 positive integers (the VAE's input)")
    return (parts[0] if len(parts) == 3 else None), parts[-2], shape


def add_parser(sub) -> None:
    from torchax_vae.stage3.arguments import PLUGIN_HELP, positive as _positive  # the command's own checks

    p = sub.add_parser("serve", help="a VAE service for diffusers' remote_decode / remote_encode (docs/guide/serve.md)")
    p.add_argument("--model", action="append", required=True, type=_named_model, metavar="NAME=PATH",
                   help="serve the VAE of PATH (a model folder or hub id, as for decode) at /decode/NAME and "
                        "/encode/NAME; repeat for more models; a :normalized or :raw suffix overrides --latents")
    p.add_argument("--latents", choices=LATENTS, default="raw",
                   help="what requests without scaling parameters carry: the decoder's own latents (raw, "
                        "diffusers' remote_decode(do_scaling=False)) or the pipeline's normalized ones (normalized: "
                        "Wan's latents_mean/std applied here, no deprecated do_scaling); per model: NAME=PATH:normalized")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"(default: {DEFAULT_PORT})")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="compute dtype (default: fp32)")
    p.add_argument("--token-file", default=None,
                   help="a file holding the token the POST routes require (Bearer, or Basic's password)")
    p.add_argument("--warmup", action="append", default=[], type=_warmup, metavar="[NAME:]KIND:SHAPE",
                   help="compile this input shape before reporting ready, e.g. decode:1,16,13,60,104; repeatable")
    p.add_argument("--max-batch", type=_positive(int), default=None,
                   help="requests of one shape per device call (default: 4 on TPUs and GPUs, 1 on CPU)")
    p.add_argument("--max-queue", type=_positive(int), default=64, help="requests waiting; more get 429 (default: 64)")
    p.add_argument("--max-wait-ms", type=float, default=5.0, help="wait for a batch to fill (default: 5)")
    p.add_argument("--max-body-mb", type=_positive(float), default=512.0, help="largest request body (default: 512)")
    p.add_argument("--max-inflight-mb", type=_positive(float), default=None,
                   help="request bodies held at once, all requests together; a request past it is answered 503 "
                        "before it is read (default: a quarter of the host memory available at start)")
    p.add_argument("--max-pixels", type=_positive(int), default=DEFAULT_MAX_PIXELS,
                   help="pixels x frames one request may decode (output) or encode (input); more get 413 "
                        f"(default: {DEFAULT_MAX_PIXELS:,}, a 10 s 720p video with room to spare)")
    p.add_argument("--timeout", type=_positive(float), default=600.0,
                   help="seconds a request may wait for its answer (default: 600)")
    p.add_argument("--max-sessions", type=_positive(int), default=16,
                   help="live sessions (WebSocket /session/NAME) open at once; more are refused (default: 16)")
    p.add_argument("--session-batch", type=_positive(int), default=8,
                   help="live sessions' rows per device call, stepped together (default: 8)")
    p.add_argument("--session-idle-s", type=_positive(float), default=30.0,
                   help="a live session with no message for this long is closed (default: 30)")
    p.add_argument("--dp", type=_positive(int), default=1,
                   help="with several devices: the mesh's 'dp' rows, over which batches split (default: 1)")
    p.add_argument("--cache-dir", default=None, help="the program cache folder (default: as for decode)")
    p.add_argument("--no-cache", action="store_true", help="no persistent program cache")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE:FAMILY", help=PLUGIN_HELP)
    p.add_argument("--log-level", choices=("warning", "info", "debug"), default="info")
    p.add_argument("--debug", action="store_true", help="show tracebacks of errors before the server starts")


def _token(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        token = pathlib.Path(path).read_text().strip()
    except OSError as e:
        raise InputError(f"--token-file {path}: cannot read it ({e.strerror or e})") from None
    if not token:
        raise InputError(f"--token-file {path} is empty; put the token in it")
    return token


def run(args) -> int:
    import jax
    import torch
    import uvicorn

    # torch, JAX and the app load here, after `torchax-vae serve`'s argument checks
    from torchax_vae import cache
    from torchax_vae.engine import process
    from torchax_vae.engine.process import make_mesh
    from torchax_vae.serve.app import create_app  # (starlette and the engine: after the arguments are checked)
    from torchax_vae.stage3.loading import load_plugins

    names = [name for name, _, _ in args.model]
    if len(set(names)) != len(names):
        raise InputError(f"--model names must differ, got {names}")
    token = _token(args.token_file)
    _return_large_buffers()
    process.start()
    load_plugins(args.plugin)
    cache.enable(cache.resolve(args.cache_dir, args.no_cache))
    mesh = _mesh(args.dp, jax.device_count(), make_mesh)
    limits = Limits(args.max_batch, args.max_queue, args.max_wait_ms, args.max_body_mb, args.timeout,
                    max_inflight_mb=args.max_inflight_mb, max_pixels=args.max_pixels, max_sessions=args.max_sessions,
                    session_batch=args.session_batch, session_idle_s=args.session_idle_s)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    normalized = [name for name, _, latents in args.model if (latents or args.latents) == "normalized"]
    app = create_app({name: path for name, path, _ in args.model}, dtype=dtype, mesh=mesh, warmup=args.warmup,
                     token=token, limits=limits, normalized=normalized)
    logging.getLogger("torchax_vae.serve").setLevel(args.log_level.upper())
    # idle keep-alive connections close after 5 s (uvicorn's default, set here so that it stays so); bodies
    # have their own deadline (serve/bodies.py)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on",
                            timeout_keep_alive=KEEP_ALIVE_SECONDS)
    service = app.state.service
    server = DrainingServer(config, service)
    threading.Thread(target=_stop_if_loading_fails, args=(server, service), daemon=True).start()
    server.run()
    if service.load_error:  # a model that cannot load ends the command (a service would answer only 503s)
        raise InputError(service.load_error)
    return 0 if server.started else 1


def _return_large_buffers() -> None:
    """glibc raises its mmap threshold after a large buffer is freed (up to 32 MB), so that later request bodies
    come from the heap, whose pages stay with the process: RSS would then grow past the body budget. Fixed at
    1 MiB, every body's buffer is mapped for it and handed back when freed (a no-op off glibc)."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 1 << 20)
    except (OSError, AttributeError):
        pass


def _exit_now(service, sig: int) -> None:
    """A second SIGINT/SIGTERM: one line naming the requests it cuts off, then the process ends with the signal's
    exit status (128 + its number), no traceback and no cleanup (the device worker may be mid-call)."""
    cut = sorted(service.requests)
    log = logging.getLogger("torchax_vae.serve")
    log.warning("second %s: exiting now; %d accepted request%s cut off%s", signal.Signals(sig).name, len(cut),
                "" if len(cut) == 1 else "s", f": {', '.join(cut)}" if cut else "")
    for handler in [*log.handlers, *logging.getLogger().handlers]:
        handler.flush()
    sys.stderr.flush()
    os._exit(128 + sig)


def _mesh(dp: int, devices: int, make_mesh):
    """The models' mesh over every device (None for one device), or an InputError naming the --dp values that work."""
    divisors = [d for d in range(1, devices + 1) if devices % d == 0]
    if dp not in divisors:
        raise InputError(f"--dp {dp} does not divide the {devices} device{'s' if devices > 1 else ''} here; "
                         f"use one of {divisors}")
    return make_mesh(dp=dp) if devices > 1 else None


def _stop_if_loading_fails(server, service) -> None:
    while not (service.ready.is_set() or service.load_error):
        time.sleep(0.1)
    if service.load_error:
        server.should_exit = True


class DrainingServer:
    """uvicorn's Server, whose first SIGTERM/SIGINT drains the service before uvicorn's shutdown begins."""

    def __new__(cls, config, service):
        import uvicorn

        class _Server(uvicorn.Server):
            def handle_exit(self, sig, frame):
                if service.draining or self.should_exit:  # a second signal: now, without unwinding anything
                    _exit_now(service, sig)
                service.begin_drain()
                logging.getLogger("torchax_vae.serve").info("draining: finishing %d accepted requests", service.active)
                threading.Thread(target=self._exit_when_drained, args=(sig, frame), daemon=True).start()

            def _exit_when_drained(self, sig, frame):
                while not service.drained():
                    time.sleep(0.02)
                super().handle_exit(sig, frame)

        return _Server(config)

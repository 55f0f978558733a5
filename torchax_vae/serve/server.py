"""`torchax-vae serve`: the app on uvicorn, with a shutdown that loses nothing.

On SIGTERM (or Ctrl-C) readiness turns 503 and new requests are answered 503 while every accepted request is
finished and answered; then uvicorn's own graceful shutdown runs and the process ends (by the signal, as
uvicorn re-raises it). A second Ctrl-C ends it at once.
"""

import argparse
import logging
import pathlib
import threading
import time

from ..checks import InputError

DEFAULT_PORT = 8000


def _named_model(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (a model folder or hub id), got {text!r}")
    return name, path


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
    from ..cli import _positive  # the command's own number checks (cli.py calls this while building its parser)

    p = sub.add_parser("serve", help="a VAE service for diffusers' remote_decode / remote_encode (docs/serve.md)")
    p.add_argument("--model", action="append", required=True, type=_named_model, metavar="NAME=PATH",
                   help="serve the VAE of PATH (a model folder or hub id, as for decode) at /decode/NAME and "
                        "/encode/NAME; repeat for more models")
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
    p.add_argument("--timeout", type=_positive(float), default=600.0,
                   help="seconds a request may wait for its answer (default: 600)")
    p.add_argument("--dp", type=_positive(int), default=1,
                   help="with several devices: the mesh's 'dp' rows, over which batches split (default: 1)")
    p.add_argument("--cache-dir", default=None, help="the program cache folder (default: as for decode)")
    p.add_argument("--no-cache", action="store_true", help="no persistent program cache")
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

    from .. import cache, process
    from ..mesh import make_mesh
    from .app import Limits, create_app

    names = [name for name, _ in args.model]
    if len(set(names)) != len(names):
        raise InputError(f"--model names must differ, got {names}")
    token = _token(args.token_file)
    process.start()
    cache.enable(cache.resolve(args.cache_dir, args.no_cache))
    mesh = make_mesh(dp=args.dp) if jax.device_count() > 1 else None
    limits = Limits(args.max_batch, args.max_queue, args.max_wait_ms, args.max_body_mb, args.timeout)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    app = create_app(dict(args.model), dtype=dtype, mesh=mesh, warmup=args.warmup, token=token, limits=limits)
    logging.getLogger("torchax_vae.serve").setLevel(args.log_level.upper())
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on")
    service = app.state.service
    server = DrainingServer(config, service)
    threading.Thread(target=_stop_if_loading_fails, args=(server, service), daemon=True).start()
    server.run()
    if service.load_error:  # a model that cannot load ends the command (a service would answer only 503s)
        raise InputError(service.load_error)
    return 0 if server.started else 1


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
                if service.draining or self.should_exit:  # a second signal: as uvicorn (Ctrl-C twice: at once)
                    return super().handle_exit(sig, frame)
                service.begin_drain()
                logging.getLogger("torchax_vae.serve").info("draining: finishing %d accepted requests", service.active)
                threading.Thread(target=self._exit_when_drained, args=(sig, frame), daemon=True).start()

            def _exit_when_drained(self, sig, frame):
                while not service.drained():
                    time.sleep(0.02)
                super().handle_exit(sig, frame)

        return _Server(config)

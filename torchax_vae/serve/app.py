"""The ASGI app (Starlette) that diffusers' `remote_decode` and `remote_encode` talk to, unchanged.

Routes: `POST /decode/{name}`, `POST /encode/{name}`, `GET /health/live`, `GET /health/ready`, `GET /metrics`, and
the live sessions' `WebSocket /session/{name}` (serve/live.py).
Every error is JSON `{"error": ...}` with a meaningful status (the client calls `response.json()` on any
non-2xx answer). docs/guide/serve.md has the protocol, the options and the measurements.
"""

import asyncio
import base64
import contextlib
import hmac
import logging
import os
import threading
import time
import uuid

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute

from torchax_vae import registry
from torchax_vae.engine import process
from torchax_vae.engine.memory import host_available_bytes
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media.checks import shown
from torchax_vae.placement.backends import backend
from torchax_vae.serve import bodies, conditions, live, outputs, protocol, sounds, streams
from torchax_vae.serve.bodies import body_size, BodyBudget, read_body
from torchax_vae.serve.limits import DEFAULT_MAX_PIXELS, Limits  # noqa: F401 (create_app's keywords; their old home)
from torchax_vae.serve.metrics import Metrics
from torchax_vae.serve.protocol import RequestError
from torchax_vae.serve.worker import DeviceWorker, Job
from torchax_vae.stage3 import sound
from torchax_vae.stage3.loading import check_served, load_vae, summary

log = logging.getLogger("torchax_vae.serve")


def default_inflight_bytes(max_body: int) -> int:
    """The body budget by default: a quarter of the host memory available now, and at least one largest body."""

    available = host_available_bytes()
    return max(max_body, available // 4) if available else 4 * max_body


class Service:
    """The app's state: the models, the device worker, readiness and draining, the token, the metrics."""

    def __init__(self, models: dict, *, dtype=None, mesh=None, warmup=(), token: str | None = None,
                 limits: Limits = Limits(), normalized=()):
        self.specs, self.dtype, self.mesh, self.warmup = dict(models), dtype, mesh, list(warmup)
        unknown = set(normalized) - set(self.specs)
        if unknown:
            raise ValueError(f"normalized names models this service does not have: {sorted(unknown)}")
        self.normalized = frozenset(normalized)  # models whose requests without scaling parameters are normalized
        self.token, self.limits = token, limits
        self.metrics = Metrics()
        self.models: dict = {}
        self.sounds: dict = {}  # name -> sound.Sound, for models served with their sound (serve/sounds.py)
        self.worker = DeviceWorker(self.models, self.metrics, sounds=self.sounds, max_batch=limits.max_batch or _backend_batch(mesh),
                                   max_queue=limits.max_queue, max_wait=limits.max_wait_ms / 1000,
                                   max_active=limits.max_active, max_sessions=limits.max_sessions,
                                   session_batch=limits.session_batch)
        self.ready = threading.Event()
        self.load_error: str | None = None
        self.draining = False
        self.active = 0  # requests between their arrival and their answer
        self.requests: dict[str, str] = {}  # those requests' ids -> "kind name" (what a second Ctrl-C cuts off)
        max_body = int(limits.max_body_mb * 2**20)
        inflight = limits.max_inflight_mb
        self.bodies = BodyBudget(int(inflight * 2**20) if inflight else default_inflight_bytes(max_body))

    def load(self) -> None:
        """Loads and wraps every model, then compiles the warm-up shapes (on the worker's thread)."""

        try:
            for name, spec in self.specs.items():
                if isinstance(spec, (str, os.PathLike)):
                    folder, spec = spec, load_vae(str(spec))
                    if sound.has_sound(folder, spec):  # a pipeline folder of LTX-2 or MiniMax H3: its audio models
                        self.sounds[name] = sound.load(str(folder), type(spec).__name__, self.dtype, self.mesh)
                if registry.facade_for(spec).model_class.__name__ in sound.AUDIO_ONLY:  # Stable Audio's: its sound alone
                    spec = spec if isinstance(spec, TorchaxVAE) else TorchaxVAE(spec, dtype=self.dtype, mesh=self.mesh)
                    self.sounds[name] = sound.audio_only(spec)
                check_served(spec, audio=True)  # (a TorchaxVAE passes for its diffusers class)
                if not isinstance(spec, TorchaxVAE):
                    spec = TorchaxVAE(spec, dtype=self.dtype, mesh=self.mesh)
                self.models[name] = spec
            for name, kind, shape in self.warmup:
                for model in [name] if name else self.models:
                    self.models[model].precompile(kind, shape)
            self.ready.set()
            self.metrics.ready.set(1)
            log.info("ready: %s", ", ".join(f"{n} ({type(m).model_class.__name__})" for n, m in self.models.items()))
        except Exception as e:
            self.load_error = f"loading the models failed: {summary(e)}"
            log.debug("loading the models failed", exc_info=True)  # the traceback with --log-level debug

    def begin_drain(self) -> None:
        """SIGTERM: readiness turns 503, new requests are answered 503; accepted ones are finished."""
        self.draining = True
        self.metrics.ready.set(0)

    def drained(self) -> bool:
        return self.active == 0 and self.worker.idle()

    def authorized(self, request: Request) -> bool:
        if self.token is None:
            return True
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "basic":  # http://user:TOKEN@host/ or ~/.netrc, as requests sends them
            try:
                value = base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(value.strip().encode(), self.token.encode())


def _backend_batch(mesh) -> int:
    """--max-batch by default: the backend table's, for the devices the models run on."""
    import jax

    process.start()  # before the first device query (a machine without an accelerator stays quiet)
    device = mesh.devices.flat[0] if mesh is not None else jax.devices()[0]
    return backend(device.platform).serve_max_batch


def _request_id(request: Request) -> str:
    """The client's X-Request-ID where it is a short plain token, else a new one: what the logs name a request by."""
    given = request.headers.get("x-request-id", "")
    if 0 < len(given) <= 64 and all(c.isascii() and (c.isalnum() or c in "-_.") for c in given):
        return given
    return uuid.uuid4().hex[:16]


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _answer_of(request: Request, future: asyncio.Future, job: Job, timeout: float):
    """The worker's result for `job`; the job is dropped if the client goes away or the timeout passes."""

    async def disconnected():
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        done, _ = await asyncio.wait({future, watcher}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if future in done:
        return future.result()
    job.cancelled = True
    future.cancel()  # nobody waits for it now: the worker drops the job, or its late result
    if watcher in done:
        raise RequestError(499, "the client went away", reason="client_gone")
    raise RequestError(504, f"no answer within {timeout:g} s; the request was dropped", reason="timeout")


async def _worker_result(request: Request, service: "Service", name: str, parsed, deadline: float):
    """The device worker's whole answer to `parsed` (a job of model `name`), queued behind the others."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def deliver(result, error):
        def settle():
            if not future.done():
                future.set_exception(error) if error is not None else future.set_result(result)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
            loop.call_soon_threadsafe(settle)

    job = Job(name, parsed, deliver, deadline)
    service.worker.submit(job)
    return await _answer_of(request, future, job, service.limits.timeout_s)


def _parse_or_refusal(*args) -> "protocol.Parsed | RequestError":
    """`_parse`, with its refusal returned rather than raised, stripped of its traceback: the thread pool's
    threads keep their last exception, and a traceback's frames would keep the request's body alive with it
    (measured: 355 MB above the body budget under large refused bodies)."""
    try:
        return _parse(*args)
    except RequestError as e:
        e.__traceback__ = e.__context__ = e.__cause__ = None
        return e


def _parse(vae, kind: str, params, headers, body, max_pixels: int, normalized: bool, speaker=None,
           name: str = "") -> protocol.Parsed:
    if kind == "encode":
        sounds.check_encode(vae, speaker, name)
        parsed = protocol.encode_request(vae, params, headers, body, normalized)
    elif sounds.asked(params) or isinstance(speaker, sounds.VAESound):  # sound: with the video's latents, or alone
        parsed = sounds.parse(vae, speaker, name, params, headers, body, normalized)
        if parsed.kind == "sound":
            return parsed
        protocol.check_answer(vae, parsed)
    elif conditions.asked(params):  # the decoder's condition (SD inpainting's image and mask) after the latents
        parsed = conditions.parse(vae, name, params, headers, body, normalized)
        protocol.check_answer(vae, parsed)
    else:
        parsed = protocol.decode_request(vae, params, headers, body, normalized)
        protocol.check_answer(vae, parsed)
    protocol.check_pixels(vae, parsed, max_pixels)
    return parsed


def _route(kind: str):
    async def handle(request: Request) -> Response:
        service: Service = request.app.state.service
        name = request.path_params["name"]
        start, status, streaming, held = time.perf_counter(), 500, False, [0]
        request_id = _request_id(request)
        if request_id in service.requests:  # a client's id in use by another request: this one gets its own
            request_id = f"{request_id}-{uuid.uuid4().hex[:6]}"
        service.requests[request_id] = f"{kind} {name}"
        service.active += 1
        service.metrics.in_progress.inc()

        def done(status):
            service.bodies.give(held[0])  # the body's bytes: its tensor is done with too
            service.requests.pop(request_id, None)
            service.active -= 1
            service.metrics.in_progress.dec()
            label = name if name in service.models else "unknown"  # no label per made-up name
            service.metrics.requests.labels(kind, label, str(status)).inc()
            service.metrics.total.labels(kind, label).observe(time.perf_counter() - start)
            if status == 499 and streaming:  # (the access log said 200: its status line went out first)
                log.info("%s %s (request %s) cancelled: the client went away mid-answer after %.3g s", kind, name,
                         request_id, time.perf_counter() - start)

        try:
            if not service.authorized(request):
                raise RequestError(401, "a valid token is required (Authorization: Bearer TOKEN, or Basic with "
                                   "the token as password)", {"WWW-Authenticate": 'Bearer realm="torchax-vae"'},
                                   reason="unauthorized")
            if service.draining:
                raise RequestError(503, "the server is shutting down", reason="shutting_down")
            if service.load_error:
                raise RequestError(503, service.load_error, reason="not_ready")
            if not service.ready.is_set():
                raise RequestError(503, "the models are loading", {"Retry-After": "5"}, reason="not_ready")
            vae = service.models.get(name)
            if vae is None:
                raise RequestError(404, f"no model named {shown(name)}; this server has {sorted(service.models)}",
                                   reason="unknown_model")
            protocol.check_query_pixels(vae, kind, request.query_params, service.limits.max_pixels)  # before reading
            size = body_size(request, int(service.limits.max_body_mb * 2**20))
            if not service.bodies.take(size):  # before a byte is read
                raise RequestError(503, f"this server holds {service.bodies.held / 2**20:.0f} MB of request bodies, "
                                   f"and this one's {size / 2**20:.3g} MB would pass its budget of "
                                   f"{service.bodies.limit / 2**20:.0f} MB (--max-inflight-mb); try again shortly",
                                   {"Retry-After": bodies.RETRY_AFTER}, reason="busy")
            held[0] = size
            params = request.query_params
            body = await read_body(request, size, exact=any(params.get(k) is not None for k in ("shape", "audio_shape")))
            speaker = service.sounds.get(name)
            parsed = await run_in_threadpool(_parse_or_refusal, vae, kind, params, request.headers, body,
                                             service.limits.max_pixels, name in service.normalized, speaker, name)
            del body  # the parsed tensor views it where it is float32; nothing else keeps it
            if isinstance(parsed, RequestError):
                raise parsed
            deadline = time.monotonic() + service.limits.timeout_s
            if parsed.kind == "sound":  # the sound alone: a job of the device worker, answered whole
                waveform = await _worker_result(request, service, name, parsed, deadline)
                content, headers, media = await run_in_threadpool(sounds.answer, speaker, parsed, waveform)
                status = 200
                return Response(content, headers={**headers, "X-Request-ID": request_id}, media_type=media)
            if kind == "decode" and parsed.output.kind in ("mp4", "frames"):  # sent as its chunks are final
                audio = None
                if parsed.audio is not None:  # its sound first, a job of the device worker, for the MP4's track
                    waveform = await _worker_result(request, service, name, sounds.job_of(parsed), deadline)
                    audio = await run_in_threadpool(sounds.track, speaker, waveform)
                response = await streams.answer(request, service, name, parsed, deadline, done, audio)
                response.headers["X-Request-ID"] = request_id  # (every answer has one, streamed ones too)
                streaming = True  # its body's end does the accounting
                return response
            result = await _worker_result(request, service, name, parsed, deadline)
            if kind == "encode":
                content, headers = await run_in_threadpool(outputs.tensor_answer, result.to(vae.dtype))
                media = "tensor/binary"
            else:
                content, headers, media = await run_in_threadpool(outputs.decode_answer, result, parsed.output, vae.dtype,
                                                                  vae._family)
            status = 200
            return Response(content, headers={**headers, "X-Request-ID": request_id}, media_type=media)
        except RequestError as e:
            status = e.status
            service.metrics.rejected.labels(e.reason).inc()
            return _error(e.status, str(e), {**e.headers, "X-Request-ID": request_id})
        except Exception as e:  # a bug or the device: this request fails, the server goes on
            log.exception("%s %s failed (request %s)", kind, name, request_id)
            return _error(500, f"{kind} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                          {"X-Request-ID": request_id})
        finally:
            if not streaming:
                done(status)

    return handle


async def _live(request: Request) -> Response:
    return JSONResponse({"status": "live"})


async def _ready(request: Request) -> Response:
    service: Service = request.app.state.service
    if service.draining:
        return _error(503, "the server is shutting down")
    if service.load_error:
        return _error(503, service.load_error)
    if not service.ready.is_set():
        return _error(503, "the models are loading", {"Retry-After": "5"})
    return JSONResponse({"status": "ready", "models": {n: type(m).model_class.__name__ for n, m in service.models.items()}})


async def _metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.service.metrics.registry), media_type=CONTENT_TYPE_LATEST)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    message = {404: f"no route {shown(request.url.path)}; POST /decode/NAME or /encode/NAME",
               405: f"{shown(request.method)} is not allowed on {shown(request.url.path)}"}.get(exc.status_code, exc.detail)
    return _error(exc.status_code, message, getattr(exc, "headers", None))


def create_app(models: dict, *, dtype=None, mesh=None, warmup=(), token: str | None = None,
               limits: Limits = Limits(), normalized=()) -> Starlette:
    """The service as an ASGI app, serving `models` ({name: TorchaxVAE, diffusers VAE, or model folder/hub id}).

    The models load (and `warmup`'s (name or None, kind, shape) compile) on the device worker's thread when the
    app starts (its lifespan); `/health/ready` answers 200 once they have. `token`: required as `Authorization:
    Bearer` (or Basic's password) on the POST routes. `dtype`, `mesh`: for the models given unwrapped.
    `normalized`: names of models whose requests without scaling parameters carry (decode) or ask for (encode)
    the latents as the family's pipelines normalize them, so video clients need no deprecated `do_scaling`.
    """
    service = Service(models, dtype=dtype, mesh=mesh, warmup=warmup, token=token, limits=limits, normalized=normalized)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.worker.start(service.load)
        yield
        service.begin_drain()
        await run_in_threadpool(service.worker.stop)

    app = Starlette(
        routes=[
            Route("/decode/{name}", _route("decode"), methods=["POST"]),
            Route("/encode/{name}", _route("encode"), methods=["POST"]),
            Route("/health/live", _live, methods=["GET"]),
            Route("/health/ready", _ready, methods=["GET"]),
            Route("/metrics", _metrics, methods=["GET"]),
            WebSocketRoute("/session/{name}", live.session_endpoint),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.service = service
    return app

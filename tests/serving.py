"""A service app run by uvicorn on a free local port, in a thread of the test process (tests/test_serve*.py)."""

import contextlib
import socket
import threading
import time

import requests
import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(app, port: int | None = None, ready_within: float = 300):
    """Runs `app` until the block ends; yields its base URL once /health/ready answers 200."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, ready_within)
        yield base
    finally:
        server.should_exit = True
        thread.join(30)


def wait_ready(base: str, within: float, process=None) -> None:
    """Until /health/ready answers 200; raises if it does not within `within` s, or `process` (a Popen) ends."""
    until = time.monotonic() + within
    while process is None or process.poll() is None:
        try:
            answer = requests.get(f"{base}/health/ready", timeout=5)
            if answer.ok:
                return
            if "failed" in answer.json().get("error", ""):
                raise RuntimeError(answer.json()["error"])
        except requests.ConnectionError:
            pass
        if time.monotonic() > until:
            raise TimeoutError(f"{base} not ready within {within} s")
        time.sleep(0.1)
    raise RuntimeError(f"the server process ended with status {process.returncode}")


def metric(base: str, name: str, **labels) -> float:
    """The sum of the Prometheus samples `name` from /metrics with these labels (0 if none)."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(requests.get(f"{base}/metrics", timeout=5).text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def served_decode(vae, latents, seed: int = 0):
    """What the service answers `pt` with for latents in the family's pipeline layout sent with do_scaling: the
    family's de-normalization, its decode inputs (LTX's timestep and noise from `seed`), an in-process decode
    (noise from the request's own generator), as [B, C, F, H, W]."""
    import torch

    z = latents.permute(0, 2, 1, 3, 4) if vae.pipeline_layout == "BFCHW" else latents
    z, args = vae.decode_inputs(vae.denormalize_latents(z), seed=seed)  # (AutoencoderTiny: not its unscale_latents)
    noise = {"generator": torch.Generator().manual_seed(seed)} if vae.decode_draws_noise else {}
    video = vae.decode(z, *args, **noise).sample
    if vae.batch_is_frames:  # Stable Video Diffusion: one video's frames [F, C, H, W], answered as [1, C, F, H, W]
        return video.permute(1, 0, 2, 3)[None]
    return video.permute(0, 2, 1, 3, 4) if vae.decoded_layout == "BFCHW" else video

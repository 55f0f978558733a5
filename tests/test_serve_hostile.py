"""The service under careless and hostile clients (issue 55): bodies sized and budgeted before they are read,
stalled bodies timed out, caps on the work of one request, short echoes, `--dp` errors, a second Ctrl-C, the
model's own normalization without diffusers' deprecated `do_scaling`, and a readable repr.

scripts/hostile_load.py sends all of these at once against one server; its figures are in docs/guide/serve.md.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import warnings

import pytest
import requests
import torch
from diffusers.utils.remote_utils import remote_decode

from helpers import assert_close, randn, random_vae, xla_flags
from serving import free_port, metric, served_decode, serving, wait_ready
from torchax_vae import TorchaxVAE
from torchax_vae.cli.demo import DEMO_MODEL
from torchax_vae.serve import Limits, create_app
from torchax_vae.serve import bodies

SHAPE = [1, 16, 2, 8, 8]  # tiny Wan latents: 8192 bytes of float32
BYTES = 16 * 2 * 8 * 8 * 4


@pytest.fixture(scope="module")
def wan():
    return TorchaxVAE(random_vae("wan-tiny"))


def _head(base: str, length: int | None, shape=SHAPE, path="/decode/wan") -> bytes:
    query = urllib.parse.urlencode({"shape": shape, "dtype": "float32", "output_type": "pt"}, doseq=True)
    host = base.removeprefix("http://")
    lines = [f"POST {path}?{query} HTTP/1.1", f"Host: {host}"]
    lines += [f"Content-Length: {length}"] if length is not None else ["Transfer-Encoding: chunked"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 30 s pass)."""
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except socket.timeout:
            return data
        if not piece:
            return data
        data += piece


def test_content_length_that_disagrees_is_refused_before_reading(wan):
    with serving(create_app({"wan": wan})) as url:
        with _connect(url) as sock:
            sock.sendall(_head(url, 100))  # the shape needs 8192 bytes; nothing of the body is sent
            sock.settimeout(10)
            first = sock.recv(65536)
        assert b" 400 " in first.split(b"\r\n")[0], first[:300]
        assert b"Content-Length is 100 bytes" in first and b"needs 8192" in first, first[-300:]


def test_a_stalled_body_gets_408_and_its_connection_closed(wan, monkeypatch):
    monkeypatch.setattr(bodies, "IDLE_SECONDS", 1.0)
    with serving(create_app({"wan": wan})) as url:
        with _connect(url) as sock:
            start = time.monotonic()
            sock.sendall(_head(url, BYTES) + b"\0" * 10)  # then nothing
            answer = _answer(sock)  # ends when the server closes the connection
            took = time.monotonic() - start
        assert b" 408 " in answer.split(b"\r\n")[0], answer[:300]
        assert b"the body came too slowly (10 of 8192 bytes in 1" in answer, answer[-300:]
        assert took < 30, f"the connection stayed open {took:.1f} s"  # (not for ever: a generous ceiling)
        assert metric(url, "torchax_vae_rejected_requests_total", reason="slow_body") == 1


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_trickling_body_is_timed_out_by_its_progress_and_holds_only_what_came(wan, monkeypatch):
    """A body that declares 256 MB and trickles a few bytes at a time, never idle for long: 408 once it falls
    behind the minimum rate by the grace (not after its declared size at that rate: 256 s), and meanwhile it holds
    the bytes that came, not 256 MB of memory (issue 75)."""
    monkeypatch.setattr(bodies, "GRACE_SECONDS", 2.0)
    shape = [1, 16, 64, 256, 256]  # 256 MB of float32 latents, declared
    declared = 16 * 64 * 256 * 256 * 4
    limits = Limits(max_body_mb=300, max_inflight_mb=600, max_pixels=2_000_000_000)
    with serving(create_app({"wan": wan}, limits=limits)) as url:
        before = _rss()
        with _connect(url) as sock:
            start = time.monotonic()
            sock.sendall(_head(url, declared, shape=shape))
            grown = []
            while time.monotonic() - start < 1.5:
                sock.sendall(b"\0" * 1000)
                time.sleep(0.2)
                grown.append(_rss() - before)
            answer = _answer(sock)
            took = time.monotonic() - start
        assert b" 408 " in answer.split(b"\r\n")[0], answer[:300]
        assert b"the body came too slowly" in answer, answer[-300:]
        assert took < 10, f"{took:.1f} s"
        assert max(grown) < 64 * 2**20, f"the server grew by {max(grown) / 2**20:.0f} MB for {8 * 1000} bytes of body"


def test_bodies_past_the_budget_get_503_before_they_are_read(wan):
    z = randn(*SHAPE, seed=1)
    body = z.numpy().tobytes()
    params = {"shape": SHAPE, "dtype": "float32", "output_type": "pt"}
    limits = Limits(max_inflight_mb=1.5 * BYTES / 2**20)  # one body at a time
    with serving(create_app({"wan": wan}, limits=limits)) as url:
        stalled = _connect(url)
        stalled.sendall(_head(url, BYTES) + body[:10])  # holds its 8192 bytes of the budget
        time.sleep(0.5)
        refused = requests.post(f"{url}/decode/wan", data=body, params=params, timeout=10)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1", refused.text
        assert "--max-inflight-mb" in refused.json()["error"]
        stalled.close()  # the server sees it go: its bytes come back
        deadline = time.monotonic() + 20
        while True:
            answer = requests.post(f"{url}/decode/wan", data=body, params=params, timeout=60)
            if answer.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text[:300]


def test_the_pixel_cap_refuses_large_work_up_front(wan):
    with serving(create_app({"wan": wan}, limits=Limits(max_pixels=5000))) as url:
        params = {"shape": SHAPE, "dtype": "float32", "output_type": "pt"}
        decode = requests.post(f"{url}/decode/wan", data=b"\0" * BYTES, params=params, timeout=30)
        assert decode.status_code == 413, decode.text
        error = decode.json()["error"]  # 2 latent frames: 5 frames of 64x64
        assert "1 x 5 frames of 64x64, 20,480 pixels" in error and "cap is 5,000" in error and "--max-pixels" in error
        with _connect(url) as sock:  # refused from the query alone: none of its body is sent
            sock.sendall(_head(url, BYTES))
            sock.settimeout(10)
            first = sock.recv(65536)
        assert b" 413 " in first.split(b"\r\n")[0] and b"--max-pixels" in first, first[:300]
        video = {"shape": [1, 3, 5, 64, 64], "dtype": "float32"}
        encode = requests.post(f"{url}/encode/wan", data=b"\0" * (3 * 5 * 64 * 64 * 4), params=video, timeout=30)
        assert encode.status_code == 413 and "holds 1 x 5 frames" in encode.json()["error"], encode.text


def test_echoed_values_are_cut_short(wan):
    with serving(create_app({"wan": wan})) as url:
        long_shape = requests.post(f"{url}/decode/wan", data=b"", timeout=30,
                                   params={"shape": ",".join(["7"] * 5000), "dtype": "float32"})
        assert long_shape.status_code == 400 and len(long_shape.json()["error"]) < 300, long_shape.text[:400]
        assert "characters)" in long_shape.json()["error"]
        unknown = requests.post(f"{url}/decode/{'m' * 5000}", data=b"", timeout=30)
        assert unknown.status_code == 404 and len(unknown.json()["error"]) < 300, unknown.text[:400]


def test_a_normalized_model_needs_no_do_scaling(wan):
    latents = randn(1, 16, 2, 8, 8, seed=4)  # as WanPipeline(output_type="latent") returns them
    expected = served_decode(wan, latents)
    with serving(create_app({"wan": wan}, normalized=["wan"])) as url:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)  # diffusers' do_scaling deprecation
            out = remote_decode(endpoint=f"{url}/decode/wan", tensor=latents, output_type="pt", return_type="pt",
                                do_scaling=False)
    assert_close(out, expected, 1e-4, "a normalized model's decode without do_scaling")
    with pytest.raises(ValueError, match="does not have"):
        create_app({"wan": wan}, normalized=["other"])


def test_repr_names_the_diffusers_class():
    vae = TorchaxVAE(random_vae("sd-tiny"))
    assert repr(vae) == "TorchaxVAE(AutoencoderKL, dtype=float32, devices=1, tiling=auto)"


def _serve(*args, devices: int = 1):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TORCHAX_VAE_CACHE_DIR": "off",
           "XLA_FLAGS": xla_flags(devices)}
    return subprocess.Popen([sys.executable, "-m", "torchax_vae", "serve", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # 12 s: a service process (CI: every sixth run)
def test_dp_that_does_not_divide_exits_2_in_one_line():
    process = _serve("--model", f"demo={DEMO_MODEL}", "--dp", "3", "--port", str(free_port()), devices=8)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 2, stderr[-2000:]
    assert stderr.strip().splitlines() == [
        "torchax-vae serve: error: --dp 3 does not divide the 8 devices here; use one of [1, 2, 4, 8]"], stderr


@pytest.mark.slow  # 14 s: a service process (CI: every sixth run)
def test_a_second_ctrl_c_exits_at_once_naming_what_it_cut_off():
    port = free_port()
    process = _serve("--model", f"demo={DEMO_MODEL}", "--port", str(port), "--log-level", "warning")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, 240, process)
        z = torch.zeros(1, 13, 16, 60, 90)  # CogVideoX's layout: compiling and decoding it takes a while
        params = {"shape": list(z.shape), "dtype": "float32", "output_type": "pt"}
        headers = {"X-Request-ID": "long-one"}

        def post():
            try:
                requests.post(f"{base}/decode/demo", data=z.numpy().tobytes(), params=params, headers=headers,
                              timeout=120)
            except requests.RequestException:
                pass  # cut off, as it should be

        threading.Thread(target=post, daemon=True).start()
        deadline = time.monotonic() + 60
        while metric(base, "torchax_vae_requests_in_progress") < 1:
            assert time.monotonic() < deadline, "the request was not accepted"
            time.sleep(0.05)
        time.sleep(0.5)  # on the device worker now
        process.send_signal(signal.SIGINT)
        time.sleep(0.3)
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    # at once: well before the long decode would end (a ceiling for a loaded machine; the cut-off line says the rest)
    assert took < 20, f"the second Ctrl-C took {took:.1f} s to end the server"
    assert process.returncode == 128 + signal.SIGINT, stderr[-2000:]
    assert "Traceback" not in stderr and "interrupted; no output written" not in stderr, stderr[-3000:]
    assert "second SIGINT: exiting now; 1 accepted request cut off: long-one" in stderr, stderr[-2000:]

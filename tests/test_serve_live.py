"""Live sessions over the network (WebSocket /session/NAME, torchax_vae/serve/live.py), with the generator's client
(torchax_vae.serve.client.session): the frames against diffusers' whole decode in PyTorch, several sessions on the
device worker stepped together, and the hostile cases (a bad chunk, a family without state, too many sessions, an
idle or vanished client, connections that never send, no token)."""

import json
import socket
import threading
import time

import numpy as np
import pytest
import requests
import torch

from helpers import assert_parity, random_vae
from serving import metric, serving
from torchax_vae import TorchaxVAE
from torchax_vae.serve import Limits, create_app
from torchax_vae.serve.client import SessionError, session
from torchax_vae.serve.live_sessions import SessionTable, step
from torchax_vae.serve.metrics import Metrics

CHUNKS = ((0, 1), (1, 3), (3, 5))  # a generator's blocks of latent frames: the first alone, then two at a time


@pytest.fixture(scope="module")
def models():
    wan = random_vae("wan-tiny").eval()
    return wan, TorchaxVAE(wan), TorchaxVAE(random_vae("sd-tiny").eval())


@pytest.fixture(scope="module")
def base(models):
    _, ours, kl = models
    limits = Limits(max_sessions=3, session_idle_s=3.0)
    with serving(create_app({"wan": ours, "kl": kl}, limits=limits)) as url:
        yield url


def latents(seed: int, batch: int = 1) -> torch.Tensor:
    return torch.randn(batch, 16, 5, 16, 16, generator=torch.Generator().manual_seed(seed))


def expected(models, z: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return models[0].decode(z).sample


def decoded(url: str, z: torch.Tensor, output: str = "float32", **kwargs) -> np.ndarray:
    with session(url, "wan", output=output, **kwargs) as s:
        parts = [s.decode(z[:, :, a:b]) for a, b in CHUNKS] + [s.finish()]
    return np.concatenate(parts, axis=2 if output == "float32" else 1)


def test_a_network_session_is_diffusers_decode_and_the_in_process_session(base, models):
    z = latents(1)
    frames = torch.from_numpy(decoded(base, z))
    assert_parity(frames, expected(models, z), "network session")
    with torch.no_grad(), models[1].decode_session() as s:
        local = torch.cat([s.decode(z[:, :, a:b]) for a, b in CHUNKS] + [s.finish()], dim=2)
    assert torch.equal(frames, local), f"network vs in-process session: max |Δ| {(frames - local).abs().max():.3g}"
    # uint8 frames as diffusers' video processor rounds them, channels last
    uint8 = decoded(base, z, output="uint8")
    rounded = ((expected(models, z) / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 4, 1)
    assert uint8.shape == tuple(rounded.shape)
    assert np.abs(uint8.astype(int) - rounded.numpy().astype(int)).max() <= 1


def test_concurrent_sessions_each_get_their_own_frames(base, models):
    zs = [latents(10 + k) for k in range(3)]
    results, errors = {}, []

    def run(k):
        try:
            results[k] = decoded(base, zs[k])
        except Exception as e:  # (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not errors, errors
    for k, z in enumerate(zs):
        assert_parity(torch.from_numpy(results[k]), expected(models, z), f"concurrent session {k}")
    assert metric(base, "torchax_vae_session_chunk_seconds_count") >= 3 * len(CHUNKS)


def test_the_worker_steps_waiting_sessions_as_one_call(models):
    """Two sessions' chunks waiting at the worker's turn run as one program call (the occupancy metric), each
    session's frames its own."""
    _, ours, _ = models
    metrics, table, got = Metrics(), SessionTable(4, lambda: None), {}
    lives = [table.open("wan", "decode") for _ in range(2)]
    zs = [latents(20), latents(21)]
    for a, b in CHUNKS:
        for live, z in zip(lives, zs):
            table.submit(live, z[:, :, a:b], lambda out, error, live=live: got.setdefault(live.id, []).append((out, error)))
        assert step(table, {"wan": ours}, metrics, max_batch=4)
    for live, z in zip(lives, zs):
        assert all(error is None for _, error in got[live.id])
        assert_parity(torch.cat([out for out, _ in got[live.id]], dim=2), expected(models, z), "stepped together")
    calls = metrics.session_occupancy.collect()[0].samples
    assert {s.name: s.value for s in calls}["torchax_vae_session_batch_sessions_sum"] == 2 * len(CHUNKS)
    assert {s.name: s.value for s in calls}["torchax_vae_session_batch_sessions_count"] == len(CHUNKS)
    table.close(lives[0])  # freed at the worker's next turn; the other goes on
    assert step(table, {"wan": ours}, metrics, max_batch=4)
    assert lives[0].session is None and lives[1].session is not None


def test_a_bad_chunk_is_an_error_on_its_session_which_goes_on(base, models):
    z = latents(2)
    with session(base, "wan", output="float32") as s:
        first = s.decode(z[:, :, :1])
        for bad, words in ((z[:, :, 1:3, :8], "as its first chunk's"), (torch.randn(1, 3, 2, 16, 16), "channels"),
                           (torch.full((1, 16, 2, 16, 16), float("nan")), "NaN")):
            with pytest.raises(SessionError, match=words) as refused:
                s.decode(bad)
            assert refused.value.status == 400
        rest = [s.decode(z[:, :, a:b]) for a, b in CHUNKS[1:]] + [s.finish()]
    assert_parity(torch.from_numpy(np.concatenate([first, *rest], axis=2)), expected(models, z), "after bad chunks")


def test_a_family_without_state_is_refused_with_the_families_that_have_one(base):
    with pytest.raises(SessionError, match="AutoencoderKLWan") as refused:
        session(base, "kl")
    assert "carries no causal state" in str(refused.value)
    with pytest.raises(SessionError, match="no model"):
        session(base, "nothing")


def test_more_sessions_than_the_limit_are_refused_and_idle_ones_close(base):
    opened = [session(base, "wan") for _ in range(3)]  # the limit; none has sent a chunk: nothing on the device
    try:
        with pytest.raises(SessionError, match="3 live sessions"):
            session(base, "wan")
        assert requests.get(f"{base}/health/live", timeout=5).ok  # responsive meanwhile
        assert metric(base, "torchax_vae_sessions_open") == 3
        time.sleep(4)  # past the idle timeout (3 s)
        with pytest.raises(SessionError, match="no message for 3 s"):
            opened[0].decode(latents(3)[:, :, :1])
    finally:
        for s in opened:
            s.close()
    assert metric(base, "torchax_vae_sessions_closed_total", how="timeout") >= 3
    deadline = time.monotonic() + 10
    while metric(base, "torchax_vae_sessions_open") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric(base, "torchax_vae_sessions_open") == 0


def test_a_client_that_vanishes_mid_chunk_frees_its_session(base, models):
    from websockets.sync.client import connect

    before = metric(base, "torchax_vae_sessions_closed_total", how="disconnect")
    z = latents(4)
    with connect(base.replace("http", "ws") + "/session/wan", max_size=None) as connection:
        assert "session" in json.loads(connection.recv(timeout=60))
        header = json.dumps({"shape": [1, 16, 1, 16, 16], "dtype": "float32"}).encode()
        connection.send(len(header).to_bytes(4, "little") + header + z[:, :, :1].numpy().tobytes())
    # (closed before its frames come)
    deadline = time.monotonic() + 60
    while metric(base, "torchax_vae_sessions_closed_total", how="disconnect") == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric(base, "torchax_vae_sessions_closed_total", how="disconnect") == before + 1
    assert_parity(torch.from_numpy(decoded(base, z)), expected(models, z), "a session after a vanished one")


def test_connections_that_never_send_hold_nothing(base):
    """Raw TCP connections that never finish a handshake: the service answers others meanwhile."""
    port = int(base.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
    try:
        start = time.monotonic()
        assert requests.get(f"{base}/health/live", timeout=5).ok
        assert time.monotonic() - start < 2
        assert metric(base, "torchax_vae_sessions_open") == 0
    finally:
        for connection in idle:
            connection.close()


def test_a_session_needs_the_token(models):
    _, ours, _ = models
    with serving(create_app({"wan": ours}, token="secret")) as url:
        with pytest.raises(Exception):
            session(url, "wan")
        with session(url, "wan", token="secret") as s:
            assert s.decode(latents(5)[:, :, :1]).shape == (1, 1, 128, 128, 3)


@pytest.mark.slow  # 23 s: a 60-chunk video beside a session (CI: every sixth run)
def test_a_session_beside_a_long_video_is_not_starved(base, models):
    """The worker's turn: every session's waiting block, then one chunk of a request. A session whose blocks come
    while a long video streams (a chunk per latent frame: 24) ends before that video does."""
    from torchax_vae.serve.client import stream_frames

    long_z, z = torch.randn(1, 16, 24, 16, 16, generator=torch.Generator().manual_seed(8)), latents(9)
    times, started = {}, threading.Event()

    def long_video():
        for k, _ in enumerate(stream_frames(f"{base}/decode/wan", long_z, do_scaling=False)):
            started.set()
            times["long chunks"] = k + 1
        times["long end"] = time.monotonic()

    thread = threading.Thread(target=long_video)
    thread.start()
    assert started.wait(120)
    frames = decoded(base, z)
    times["session end"], chunks_then = time.monotonic(), times["long chunks"]
    thread.join(300)
    assert times["session end"] < times["long end"] and chunks_then < 24, (times, chunks_then)
    assert_parity(torch.from_numpy(frames), expected(models, z), "a session beside a long video")


def test_an_encode_session_over_the_network_is_diffusers_encode(base, models):
    """kind="encode": a video's frames sent in the encoder's chunks (1, then 4 at a time), the latents (the
    posterior's mode) back, equal to diffusers' whole encode."""
    wan = models[0]
    x = torch.rand(1, 3, 9, 64, 64, generator=torch.Generator().manual_seed(30)) * 2 - 1
    with session(base, "wan", kind="encode", output="float32") as s:
        parts = [s.encode(x[:, :, a:b]) for a, b in ((0, 1), (1, 5), (5, 9))] + [s.finish()]
    with torch.no_grad():
        expected_ = wan.encode(x).latent_dist.mode()
    assert_parity(torch.from_numpy(np.concatenate(parts, axis=2)), expected_, "network encode session")

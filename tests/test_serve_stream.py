"""The service's streamed decodes (serve/streams.py, serve/worker.py): raw frames through the package's client and
fragmented MP4s through diffusers' unchanged `remote_decode`, equal to an in-process decode; a small request beside a
long video, answered before the video ends; a reader that goes away stops its batch mid-way.

Ordering is asserted by events, not wall-clock times (the figures are scripts/stream_bench.py's).
"""

import concurrent.futures
import threading

import numpy as np
import pytest
import requests
import torch
from diffusers.utils.remote_utils import remote_decode

from helpers import assert_parity, randn, random_vae
from serving import metric, serving
from torchax_vae import TorchaxVAE
from torchax_vae.media.files import write_mp4
from torchax_vae.media.video_input import read_video
from torchax_vae.serve import Limits, create_app
from torchax_vae.serve.client import StreamError, stream_frames


def _uint8(video):  # [B, C, F, H, W] in [-1, 1] -> [B, F, H, W, C], as diffusers' processors round
    return ((video / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 4, 1).numpy()


@pytest.fixture(scope="module")
def plain():
    """diffusers' Wan in PyTorch: every answer here is compared with its decode, not the wrapper's."""
    return random_vae("wan-tiny")


@pytest.fixture(scope="module")
def wan(plain):
    return TorchaxVAE(plain)


@pytest.fixture(scope="module")
def base(wan):
    with serving(create_app({"wan": wan, "flux": TorchaxVAE(random_vae("flux-tiny"))})) as url:
        yield url


def test_frames_stream_through_the_client_as_diffusers_decodes(base, plain):
    z = randn(1, 16, 6, 8, 8, seed=3)
    with torch.no_grad():
        expected = _uint8(plain.decode(z).sample)
    chunks = list(stream_frames(f"{base}/decode/wan", z, do_scaling=False))
    assert len(chunks) == 6 and [c.shape[1] for c in chunks] == [1, 4, 4, 4, 4, 4]  # one per latent frame
    got = np.concatenate(chunks, axis=1)
    assert got.shape == expected.shape and np.abs(got.astype(int) - expected.astype(int)).max() <= 1
    assert metric(base, "torchax_vae_first_chunk_seconds_count") >= 1
    assert metric(base, "torchax_vae_chunks_total") >= 6


def test_a_fragmented_mp4_reads_as_the_decoded_frames(base, plain, tmp_path):
    z = randn(1, 16, 4, 8, 8, seed=4)
    streamed = remote_decode(endpoint=f"{base}/decode/wan", tensor=z, output_type="mp4", return_type="mp4",
                             do_scaling=False)
    assert b"moof" in streamed  # fragments
    (tmp_path / "streamed.mp4").write_bytes(streamed)
    # the frames the service streams (within one level of diffusers' decode: the test above)
    frames = np.concatenate(list(stream_frames(f"{base}/decode/wan", z, do_scaling=False)), axis=1)[0]
    with torch.no_grad():
        levels = _uint8(plain.decode(z).sample)[0]
    assert np.abs(frames.astype(int) - levels.astype(int)).max() <= 1
    write_mp4(tmp_path / "whole.mp4", frames)  # the command's MP4 of the same frames
    got, fps = read_video(tmp_path / "streamed.mp4")
    want, _ = read_video(tmp_path / "whole.mp4")
    assert fps == 8 and got.shape == want.shape == frames.shape
    # both lossy at CRF 12; the stream's keyframes and x264's zero latency cost no more than a level or two
    streamed_error, whole_error = (np.abs(v.astype(int) - frames.astype(int)).max() for v in (got, want))
    assert streamed_error <= whole_error + 2, (streamed_error, whole_error)


def _fragment_ends(data: bytes) -> list[int]:
    """Where each top-level MP4 box after the header ends, in bytes (a fragment: a moof box, then its mdat)."""
    ends, at = [], 0
    while at + 8 <= len(data):
        size, kind = int.from_bytes(data[at:at + 4], "big"), data[at + 4:at + 8]
        at += size
        if kind == b"mdat":
            ends.append(at)
    return ends


def test_a_streamed_mp4_plays_fragment_by_fragment(base, tmp_path):
    """Each fragment starts with a keyframe and ends at a chunk boundary once it holds 8 frames (Wan's chunks: 1,
    then 4 each): the bytes up to each fragment's end play that many frames, read by ffmpeg's demuxer (issue 75).
    How soon they arrive: scripts/stream_bench.py --service (docs/results/performance.md)."""
    import imageio_ffmpeg
    import subprocess

    z = randn(1, 16, 9, 8, 8, seed=5)  # 33 frames
    answer = requests.post(f"{base}/decode/wan", params={"shape": "1,16,9,8,8", "dtype": "float32",
                                                         "output_type": "mp4"}, data=z.numpy().tobytes())
    assert answer.status_code == 200
    playable = []
    for end in _fragment_ends(answer.content):
        (tmp_path / "prefix.mp4").write_bytes(answer.content[:end])
        out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "prefix.mp4"),
                              "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True)
        playable.append(len(out.stdout) // (64 * 64 * 3))
    assert playable == [9, 17, 25, 33], playable


@pytest.mark.parametrize("output_type", ["mp4", "frames"])
def test_a_streamed_answer_carries_its_request_id(base, output_type):
    z = randn(1, 16, 2, 8, 8, seed=9)
    answer = requests.post(f"{base}/decode/wan", data=z.numpy().tobytes(), timeout=120,
                           params={"shape": list(z.shape), "dtype": "float32", "output_type": output_type},
                           headers={"X-Request-ID": "stream-42"})
    assert answer.status_code == 200 and answer.content, answer.text[:200]
    assert answer.headers["X-Request-ID"] == "stream-42"


def test_streamed_outputs_are_refused_for_images_and_errors_say_so(base):
    with pytest.raises(StreamError, match="400: AutoencoderKL decodes images, not videos"):
        list(stream_frames(f"{base}/decode/flux", randn(1, 16, 4, 4)))
    with pytest.raises(StreamError, match="400: latents have 4 channels .* decoder takes 16"):
        list(stream_frames(f"{base}/decode/wan", randn(1, 4, 2, 8, 8), do_scaling=False))


class Recorder:
    """Records, on the worker's thread, each chunk the model's streams yield ("long" for videos of 8 or more latent
    frames, else "small"), and holds the long video after its first chunk until `go` is set."""

    def __init__(self, vae):
        self.vae, self.original = vae, vae.decode_stream
        self.order, self.go, self.first = [], threading.Event(), threading.Event()

        def decode_stream(z, *args, **kwargs):
            return self._recorded(self.original(z, *args, **kwargs), "long" if z.shape[2] >= 8 else "small")

        vae.decode_stream = decode_stream

    def _recorded(self, stream, tag):
        with stream:
            for i, chunk in enumerate(stream):
                if tag == "long" and i == 1:
                    self.first.set()
                    assert self.go.wait(120), "the test never let the long video go on"
                self.order.append((tag, i))
                yield chunk
        self.order.append((tag, "end"))

    def close(self):
        self.go.set()
        vars(self.vae).pop("decode_stream", None)


def test_a_small_request_beside_a_long_video_waits_a_chunk_not_the_video(wan, plain):
    long_z, small_z = randn(1, 16, 12, 8, 8, seed=5), randn(1, 16, 2, 8, 8, seed=6)
    wan.decode(long_z), wan.decode(small_z)  # compiled
    recorder = Recorder(wan)
    try:
        with serving(create_app({"wan": wan}, limits=Limits(max_batch=1, max_wait_ms=0))) as url:
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                long = pool.submit(lambda: list(stream_frames(f"{url}/decode/wan", long_z, do_scaling=False)))
                assert recorder.first.wait(120)  # the long video is mid-way
                small = pool.submit(remote_decode, endpoint=f"{url}/decode/wan", tensor=small_z, output_type="pt",
                                    return_type="pt", do_scaling=False)
                for _ in range(600):  # queued behind the long video's chunk
                    if metric(url, "torchax_vae_queue_length") == 1:
                        break
                    threading.Event().wait(0.05)
                recorder.go.set()
                chunks, small = long.result(timeout=300), small.result(timeout=300)
        order = recorder.order
        assert order.index(("small", "end")) < order.index(("long", 11)), order  # answered mid-video
        with torch.no_grad():
            assert_parity(small, plain.decode(small_z).sample, "the small request")
        assert sum(c.shape[1] for c in chunks) == 45
    finally:
        recorder.close()


def test_a_reader_that_leaves_stops_its_batch_mid_way(wan, caplog):
    caplog.set_level("INFO", logger="torchax_vae.serve")
    z = randn(1, 16, 12, 8, 8, seed=7)
    wan.decode(z)  # compiled
    recorder = Recorder(wan)
    try:
        with serving(create_app({"wan": wan})) as url:
            query = "&".join(f"shape={d}" for d in z.shape) + "&dtype=float32&output_type=frames&do_scaling=false"
            with requests.post(f"{url}/decode/wan?{query}", data=z.numpy().tobytes(), stream=True, timeout=60) as r:
                assert r.status_code == 200
                next(r.iter_content(64))  # the first chunk's record has come
            for _ in range(600):  # the server saw it go (its answer counted as 499)
                if metric(url, "torchax_vae_requests_total", code="499") == 1:
                    break
                threading.Event().wait(0.05)
            recorder.go.set()
            for _ in range(600):
                if metric(url, "torchax_vae_cancelled_jobs_total") == 1:
                    break
                threading.Event().wait(0.05)
            assert metric(url, "torchax_vae_cancelled_jobs_total") == 1
            assert metric(url, "torchax_vae_chunks_total") == 2  # of its 12: the one it waited in, then stopped
            assert ("long", "end") not in recorder.order and requests.get(f"{url}/health/ready", timeout=10).ok
        tracebacks = [record.getMessage() for record in caplog.records if record.exc_info]
        assert not tracebacks, tracebacks  # the server logs no traceback for a reader that left
        # uvicorn's access line says 200 (the status went out first); the service's own says what happened
        assert any("cancelled: the client went away mid-answer" in record.getMessage() for record in caplog.records)
    finally:
        recorder.close()

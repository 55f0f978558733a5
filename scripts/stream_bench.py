"""Streamed decode figures (docs/results/performance.md, "Streaming"): a benchmark, never a timed test.

--ttff: time to first chunk over the whole decode's time, per video family, warm (programs compiled), with
        decode_stream against decode on the same wrapper in one process.
--rss LENGTHS: `torchax-vae decode` (streamed to ffmpeg) on the demo model's latents of each length, each in a
        process of its own; its peak RSS (getrusage of the child) and seconds.
--encode-rss LENGTHS: the same for `torchax-vae encode` of a synthetic MP4 (read a frame batch at a time).
--service: through `torchax-vae serve`'s app: time to the first bytes and to the first playable frame (an MP4's bytes
        so far decoded by ffmpeg, as a player would) over the whole answer (frames, mp4), and a small decode's
        latency beside a long video, with one batch at a time and with chunk scheduling.

    python scripts/stream_bench.py --ttff --json rows.jsonl
    python scripts/stream_bench.py --ttff --cases wan2.1=81x480x832 --dtype bf16   # a released size (on a GPU)
    python scripts/stream_bench.py --rss 49,193,481,1441 --size 120x176
    python scripts/stream_bench.py --encode-rss 49,193,481 --size 120x176
    python scripts/stream_bench.py --service
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# config -> (frames, height, width): several chunks per family at its tiny config
TTFF_CASES = {
    "wan-tiny": (81, 64, 64), "qwenimage-tiny": (41, 64, 64), "tiny": (49, 64, 64), "hunyuan-tiny": (129, 64, 64),
    "ltx091-tiny": (161, 64, 64), "minimaxh3-tiny": (124, 64, 64),
}


def ttff(rows, cases=None, dtype=None):
    """cases: {config: (frames, height, width)} (default TTFF_CASES); dtype: the wrappers' compute dtype."""
    import torch
    from vaes import decode_args, random_vae

    from torchax_vae import TorchaxVAE
    from torchax_vae.models import input_shape

    for name, size in (cases or TTFF_CASES).items():
        vae = random_vae(name)
        ours = TorchaxVAE(vae, dtype=dtype)
        if hasattr(ours, "use_framewise_decoding"):
            ours.use_framewise_decoding = True
        z = torch.randn(*input_shape(vae, "decode", *size), generator=torch.Generator().manual_seed(0)).to(ours.dtype)
        args = decode_args(vae, 1)
        noise = (lambda: {"generator": torch.Generator().manual_seed(1)}) if ours.decode_draws_noise else dict
        # the stream first, so the device's peak after it is the stream's own; then the whole decode
        list(ours.decode_stream(z, *args, **noise()))  # compile the chunk programs
        start = time.perf_counter()
        stream = ours.decode_stream(z, *args, **noise())
        next(stream)
        first = time.perf_counter() - start
        chunks = 1 + sum(1 for _ in stream)
        streamed = time.perf_counter() - start
        stream_peak = device_peak_gb()
        ours.decode(z, *args, **noise())  # compile
        start = time.perf_counter()
        ours.decode(z, *args, **noise())
        whole = time.perf_counter() - start
        row = {"case": name, "dtype": str(ours.dtype).removeprefix("torch."), "device": str(jax_device()),
               "shape": list(size), "chunks": chunks, "first_chunk_s": round(first, 3),
               "stream_s": round(streamed, 3), "decode_s": round(whole, 3), "ratio": round(first / whole, 3),
               "peak_device_gb_stream": stream_peak, "peak_device_gb_after_whole": device_peak_gb()}
        print(json.dumps(row), flush=True)
        rows.append(row)


def device_peak_gb():
    """JAX's peak device memory so far in this process (GB), or None on CPU (no statistics there)."""
    import jax

    stats = jax.devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    return round(stats["peak_bytes_in_use"] / 1e9, 2) if stats and "peak_bytes_in_use" in stats else None


def jax_device():
    import jax

    return jax.devices()[0].device_kind


def _synthetic_video(path, frames: int, height: int, width: int) -> None:
    """An MP4 of moving shapes, written 16 frames at a time (the script holds no whole video either)."""
    from torchax_vae.media import files
    from torchax_vae.media.synthetic import moving_shapes

    with files.frame_writer(path, shape=(frames, height, width, 3)) as write:
        for start in range(0, frames, 16):
            n = min(16, frames - start)
            clip = moving_shapes(start, 1, n, height, width)[0]  # [3, n, H, W] in [-1, 1]
            write(((clip.transpose(1, 2, 3, 0) + 1) * 127.5).round().clip(0, 255).astype("uint8"))


def rss(rows, lengths, size, kind="decode"):
    """`torchax-vae decode` (of random latents) or `encode` (of a synthetic MP4) per length, each in a process of
    its own: its peak RSS and seconds."""
    import torch

    height, width = size
    model = HERE.parent / "torchax_vae" / "assets" / "tiny_vae"
    with tempfile.TemporaryDirectory() as folder:
        for frames in lengths:
            if kind == "decode":
                source = pathlib.Path(folder) / f"z{frames}.pt"
                # CogVideoX's latents [B, F, C, h, w]: (frames - 1) / 4 + 1 latent frames of (height / 8) x (width / 8)
                torch.save(torch.randn(1, (frames - 1) // 4 + 1, 16, height // 8, width // 8), source)
                out = pathlib.Path(folder) / f"v{frames}.mp4"
            else:
                source = pathlib.Path(folder) / f"in{frames}.mp4"
                _synthetic_video(source, frames, height, width)
                out = pathlib.Path(folder) / f"z{frames}.npy"
            start = time.perf_counter()
            with tempfile.TemporaryFile("w+") as log:
                command = [str(pathlib.Path(sys.executable).with_name("torchax-vae")), kind, str(source), "-o",
                           str(out), "--model", str(model), "--no-progress"]
                proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
                _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
                proc.returncode = os.waitstatus_to_exitcode(status)
                seconds = time.perf_counter() - start
                log.seek(0)
                output = log.read()
            if proc.returncode:
                raise SystemExit(output)
            row = {"command": kind, "frames": frames, "size": f"{height}x{width}", "seconds": round(seconds, 1),
                   "peak_rss_mb": round(usage.ru_maxrss / 1024),
                   "output_mb": round(out.stat().st_size / 1e6, 1), "line": output.strip().splitlines()[-1]}
            print(json.dumps(row), flush=True)
            rows.append(row)


def first_playable(marks, output_type: str, size: int) -> tuple[float, int]:
    """When the bytes received first held a playable frame, and how many: an MP4's bytes so far read by ffmpeg's
    demuxer and decoder (what a player has), the frames framing's first whole record of frames."""
    import imageio_ffmpeg

    for seconds, _, data in marks:
        if output_type == "frames":
            header = int.from_bytes(data[:4], "little") if len(data) >= 4 else None
            if header is None or len(data) < 4 + header:
                continue
            shape = json.loads(data[4:4 + header]).get("shape")
            if shape and len(data) >= 4 + header + shape[0] * shape[1] * shape[2] * shape[3] * shape[4]:
                return seconds, shape[1]
            continue
        with tempfile.NamedTemporaryFile(suffix=".mp4") as f:
            f.write(data)
            f.flush()
            out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "quiet", "-i", f.name, "-f", "rawvideo",
                                  "-pix_fmt", "rgb24", "-"], capture_output=True)
        if len(out.stdout) >= size * size * 3:
            return seconds, len(out.stdout) // (size * size * 3)
    return float("nan"), 0


def service(rows, frames: int, size: int, small: int):
    """Through the service (in this process, uvicorn on a loopback port): the time to the first streamed bytes
    over the whole answer, for output_type=frames and mp4; then a small decode's latency while a long video
    decodes beside it, with the worker advancing one batch at a time (max_active=1: a request at a time, as
    before chunk scheduling) and four in turn (the default)."""
    import concurrent.futures
    import statistics

    import requests
    import torch
    from vaes import random_vae

    sys.path.insert(0, str(HERE.parent / "tests"))
    from serving import serving

    from torchax_vae import TorchaxVAE
    from torchax_vae.serve import Limits, create_app

    wan = TorchaxVAE(random_vae("wan-tiny"))
    long_z = torch.randn(1, 16, (frames - 1) // 4 + 1, size // 8, size // 8, generator=torch.Generator().manual_seed(0))
    small_z = torch.randn(1, 16, 1, small // 8, small // 8, generator=torch.Generator().manual_seed(1))
    wan.decode(long_z), wan.decode(small_z)  # compiled

    def post(url, z, output_type, marks=None):
        """(first bytes s, whole answer s, bytes); `marks` gets (s, bytes so far, the bytes) as each part comes."""
        query = "&".join(f"shape={d}" for d in z.shape) + f"&dtype=float32&output_type={output_type}"
        start = time.perf_counter()
        with requests.post(f"{url}/decode/wan?{query}", data=z.numpy().tobytes(), stream=True, timeout=600) as r:
            r.raise_for_status()
            first, data = None, b""
            for part in r.iter_content(None):
                first = first or time.perf_counter() - start
                data += part
                if marks is not None:
                    marks.append((time.perf_counter() - start, len(data)))
        if marks is not None:
            marks[:] = [(t, n, data[:n]) for t, n in marks]
        return first, time.perf_counter() - start, len(data)

    for active in (1, 4):
        with serving(create_app({"wan": wan}, limits=Limits(max_batch=1, max_wait_ms=0, max_active=active))) as url:
            if active == 4:
                for output_type in ("frames", "mp4"):
                    post(url, long_z, output_type)  # warm
                    marks = []
                    first, total, nbytes = post(url, long_z, output_type, marks)
                    playable_s, playable_frames = first_playable(marks, output_type, size)
                    row = {"service": output_type, "frames": frames, "size": size, "first_bytes_s": round(first, 3),
                           "first_playable_s": round(playable_s, 3), "first_playable_frames": playable_frames,
                           "answer_s": round(total, 3), "ratio": round(playable_s / total, 3), "bytes": nbytes}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            idle = [post(url, small_z, "pt")[1] for _ in range(5)]
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                long = pool.submit(post, url, long_z, "frames")
                time.sleep(0.5)
                beside = []
                while not long.done() and len(beside) < 20:
                    beside.append(post(url, small_z, "pt")[1])
                long_total = long.result()[1]
            row = {"service": "small beside long", "max_active": active, "long_frames": frames, "long_size": size,
                   "small_size": small, "idle_small_median_s": round(statistics.median(idle), 3),
                   "beside_small_median_s": round(statistics.median(beside), 3) if beside else None,
                   "beside_small_max_s": round(max(beside), 3) if beside else None, "small_answered": len(beside),
                   "long_s": round(long_total, 3)}
            print(json.dumps(row), flush=True)
            rows.append(row)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttff", action="store_true")
    parser.add_argument("--cases", type=lambda s: {c.split("=")[0]: tuple(int(n) for n in c.split("=")[1].split("x"))
                                                   for c in s.split(",")},
                        help="--ttff's cases instead of the tiny ones: config=FRAMESxHEIGHTxWIDTH,... (vaes.py's names)")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="--ttff's compute dtype")
    parser.add_argument("--rss", type=lambda s: [int(n) for n in s.split(",")])
    parser.add_argument("--encode-rss", type=lambda s: [int(n) for n in s.split(",")],
                        help="as --rss, for `torchax-vae encode` of a synthetic MP4 of each length")
    parser.add_argument("--size", type=lambda s: tuple(int(n) for n in s.split("x")), default=(480, 720))
    parser.add_argument("--service", action="store_true")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    from torchax_vae.engine import process

    process.start()
    rows = []
    if args.ttff:
        ttff(rows, args.cases, {"fp32": None, "bf16": "bf16"}[args.dtype])
    if args.rss:
        rss(rows, sorted(args.rss), args.size)
    if args.encode_rss:
        rss(rows, sorted(args.encode_rss), args.size, "encode")
    if args.service:
        service(rows, frames=81, size=128, small=64)
    if args.json:
        with open(args.json, "a") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)


if __name__ == "__main__":
    main()

"""Live streams on one device: N generators, each sending a video's latents a block at a time, decoded by sessions.

    python scripts/live_bench.py                                   # in process: batched against one after the other
    python scripts/live_bench.py --service                         # the same through the service's WebSocket sessions
    python scripts/live_bench.py --model wan2.1 --height 480 --width 832 --streams 1,2,4,8 --out docs/results/data/x.json

In process, for each N: N decode sessions of one TorchaxVAE, each fed `--blocks` blocks of `--block` latent frames
(a realtime generator's: Self-Forcing and CausVid send 3), stepped together (`decode_sessions`: one batched program
call per step) and, against it, one after the other (each session's `decode` in turn, as before). Through the
service (`--service`: the app on a local port, one WebSocket client per stream in its own thread), the N generators
send their blocks at once, each its next as soon as its last block's frames have come (`--fps`: or at that video
rate, a block every block-frames / fps seconds), against a server that steps its sessions together
(`--session-batch 8`, the default) and one that runs them one after the other (`--session-batch 1`).

Reported per N: the aggregate frames per second (all streams' frames over the wall time), the per-block latency
(a block's send to its frames, p50 and p99, the first block apart: it compiles), and batched / one-after-the-other.
Random weights of the named architecture (scripts/vaes.py), XLA's default optimization. A benchmark, never a test.
"""

import argparse
import json
import os
import pathlib
import platform
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


def summary(latencies: list, frames: int, seconds: float) -> dict:
    return {"fps": frames / seconds, "p50_ms": 1000 * percentile(latencies, 50), "p99_ms": 1000 * percentile(latencies, 99),
            "frames": frames, "seconds": seconds}


def blocks_of(z, block: int) -> list:
    return [z[:, :, k:k + block] for k in range(0, z.shape[2], block)]


def in_process(ours, latents: list, block: int, batched: bool) -> dict:
    """Every stream's blocks, stepped together (`batched`) or each session's in turn; latencies from each step's
    start (every generator's block is ready then) to its frames."""
    import torch

    sessions = [ours.decode_session() for _ in latents]
    streams = [blocks_of(z, block) for z in latents]
    latencies, frames, start = [], 0, time.perf_counter()
    with torch.no_grad():
        for step in range(len(streams[0])):
            began = time.perf_counter()
            if batched:
                out = ours.decode_sessions({s: blocks[step] for s, blocks in zip(sessions, streams)})
                frames += sum(o.shape[2] for o in out.values())  # (decode_sessions' outputs are on the host: final)
                latencies += [time.perf_counter() - began] * len(sessions)
            else:
                for s, blocks in zip(sessions, streams):
                    frames += s.decode(blocks[step]).shape[2]
                    latencies.append(time.perf_counter() - began)
    for s in sessions:
        s.close()
    return summary(latencies, frames, time.perf_counter() - start)


def through_service(url: str, name: str, latents: list, block: int, fps: float) -> dict:
    """One WebSocket client per stream, each in its own thread, sending its blocks at once (or at `fps`)."""
    from torchax_vae.serve.client import session

    latencies, frames, errors = [], [0], []
    gate = threading.Barrier(len(latents))

    def generator(z):
        try:
            with session(url, name, output="uint8") as s:
                gate.wait()
                due = time.perf_counter()
                for piece in blocks_of(z, block):
                    if fps:
                        time.sleep(max(0.0, due - time.perf_counter()))
                        due += piece.shape[2] * 4 / fps  # (a block of f latent frames is about 4f video frames)
                    sent = time.perf_counter()
                    out = s.decode(piece)
                    latencies.append(time.perf_counter() - sent)
                    frames[0] += out.shape[1]
        except Exception as e:  # (reported after)
            errors.append(e)

    threads = [threading.Thread(target=generator, args=(z,)) for z in latents]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return summary(latencies, frames[0], time.perf_counter() - start)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="wan2.1", help="an architecture of scripts/vaes.py (default: wan2.1, random weights)")
    p.add_argument("--height", type=int, default=64, help="video height in pixels (default: 64, sized for 2 CPU cores)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--block", type=int, default=3, help="latent frames per block (default: 3)")
    p.add_argument("--blocks", type=int, default=4, help="blocks per stream, the first included (default: 4)")
    p.add_argument("--streams", default="1,2,4,8", help="stream counts (default: 1,2,4,8)")
    p.add_argument("--service", action="store_true", help="through the service's WebSocket sessions")
    p.add_argument("--fps", type=float, default=0.0, help="with --service: each generator's video rate (0: as fast as it can)")
    p.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = p.parse_args()

    import importlib.metadata

    import torch
    import diffusers
    import jax

    from vaes import random_vae
    from torchax_vae import TorchaxVAE

    counts = [int(n) for n in args.streams.split(",")]
    vae = random_vae(args.model).eval()
    ours = TorchaxVAE(vae)
    ratio = ours.spatial_compression_ratio
    frames = args.block * args.blocks
    shape = (1, ours.latent_channels, frames, args.height // ratio, args.width // ratio)
    latents = [torch.randn(*shape, generator=torch.Generator().manual_seed(k)) for k in range(max(counts))]
    rows = []
    print(f"{args.model} {args.height}x{args.width}, blocks of {args.block} latent frames, {args.blocks} blocks a stream; "
          f"{jax.devices()[0].device_kind} x{jax.device_count()}", flush=True)
    if args.service:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from serving import serving  # the app on uvicorn in this process (as scripts/stream_bench.py runs it)

        from torchax_vae.serve import Limits, create_app

        figures = {}
        for label, batch in (("batched", 8), ("one_after_another", 1)):  # --session-batch 8, and 1: no batching
            with serving(create_app({"vae": ours}, limits=Limits(session_batch=batch))) as url:
                through_service(url, "vae", latents[:1], args.block, 0)  # warm-up: one stream's programs
                for n in counts:
                    through_service(url, "vae", latents[:n], args.block, 0)  # this batch size's programs
                    figures[label, n] = through_service(url, "vae", latents[:n], args.block, args.fps)
        for n in counts:
            row = {"streams": n, "batched": figures["batched", n], "one_after_another": figures["one_after_another", n]}
            row["ratio"] = row["batched"]["fps"] / row["one_after_another"]["fps"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    else:
        cold = time.perf_counter()
        in_process(ours, latents[:1], args.block, batched=False)
        first = time.perf_counter() - cold
        for n in counts:
            in_process(ours, latents[:n], args.block, batched=True)  # warm-up: this batch size's programs
            row = {"streams": n, "batched": in_process(ours, latents[:n], args.block, batched=True),
                   "one_after_another": in_process(ours, latents[:n], args.block, batched=False)}
            row["ratio"] = row["batched"]["fps"] / row["one_after_another"]["fps"]
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"first stream's blocks, cold (compiles included): {first:.2f} s", flush=True)
    if args.out:
        record = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.node()} {os.cpu_count()} CPUs",
                  "device": f"{jax.devices()[0].device_kind} x{jax.device_count()}", "model": args.model,
                  "size": [args.height, args.width], "block": args.block, "blocks": args.blocks, "fps": args.fps,
                  "service": args.service, "versions": {"torch": torch.__version__, "jax": jax.__version__,
                  "torchax": importlib.metadata.version("torchax"), "diffusers": diffusers.__version__}, "rows": rows}
        path = pathlib.Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, path)  # (written atomically)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measures `torchax-vae serve` against the same decode in process and against a `torchax-vae decode` process per
video, on one machine in one run (docs/guide/serve.md has the figures).

For each model (the demo's tiny CogVideoX, and Wan 2.1's released architecture with random weights at a small
shape) it starts the server twice (--max-batch 1 and 4), sends the unchanged client's requests (output_type
"pt") from 1, 4 and 16 concurrent clients, and reports latency p50/p99 and requests per second. Beside them:
an in-process `TorchaxVAE.decode` of the same latents (p50), and a `torchax-vae decode` process per video
(its wall time, with the program store warm).

    python scripts/serve_bench.py [--models tiny wan2.1] [--requests 16] [--json out.json]
"""

import argparse
import concurrent.futures
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import requests  # noqa: E402
import torch  # noqa: E402

from serving import free_port, wait_ready  # noqa: E402
from vaes import random_vae  # noqa: E402

# model -> (how to get its folder, latents in the VAE's layout [B, C, F, H, W])
CASES = {
    "tiny": ("demo", (1, 16, 3, 12, 16)),  # the demo's CogVideoX: 9 frames of 96x128
    "wan2.1": ("wan2.1", (1, 16, 3, 8, 8)),  # Wan 2.1's architecture: 9 frames of 64x64
}


def _folder(source: str, root: Path) -> Path:
    if source == "demo":
        from torchax_vae.cli.demo import DEMO_MODEL

        return DEMO_MODEL
    folder = root / source
    random_vae(source).save_pretrained(folder)
    return folder


def _percentile(values, q):
    return float(np.percentile(np.asarray(values) * 1000, q))


def _request(base, name, params, body):
    start = time.perf_counter()
    answer = requests.post(f"{base}/decode/{name}", params=params, data=body, timeout=600)
    assert answer.status_code == 200, answer.text
    return time.perf_counter() - start


def _load(base, name, params, body, clients, count):
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        start = time.perf_counter()
        latencies = list(pool.map(lambda _: _request(base, name, params, body), range(count)))
        wall = time.perf_counter() - start
    return {"clients": clients, "requests": count, "p50_ms": _percentile(latencies, 50),
            "p99_ms": _percentile(latencies, 99), "requests_per_second": count / wall}


def _serve(name, folder, max_batch, cache):
    port = free_port()
    command = [sys.executable, "-m", "torchax_vae", "serve", "--model", f"{name}={folder}", "--port", str(port),
               "--max-batch", str(max_batch), "--log-level", "warning", "--cache-dir", str(cache)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, 900, process)
    return process, base


def _in_process(folder, z, count):
    from torchax_vae import TorchaxVAE

    ours = TorchaxVAE.from_pretrained(str(folder), subfolder=None)
    ours.decode(z)  # compiles
    times = []
    for _ in range(count):
        start = time.perf_counter()
        ours.decode(z).sample.numpy()
        times.append(time.perf_counter() - start)
    return _percentile(times, 50)


def _command(folder, z, cache, root, runs=3):
    """Wall seconds of `torchax-vae decode` per video (one run first fills the program store)."""
    latents = root / "latents.pt"
    torch.save(z, latents)
    command = [sys.executable, "-m", "torchax_vae", "decode", str(latents), "-o", str(root / "video.npy"),
               "--model", str(folder), "--no-progress", "--cache-dir", str(cache), "--layout", "BCFHW"]
    subprocess.run(command, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def bench(name, count, root):
    source, shape = CASES[name]
    folder = _folder(source, root)
    z = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    from torchax_vae import TorchaxVAE

    layout = TorchaxVAE.from_pretrained(str(folder), subfolder=None).pipeline_layout
    sent = z.permute(0, 2, 1, 3, 4).contiguous() if layout == "BFCHW" else z
    params = {"shape": list(sent.shape), "dtype": "float32", "output_type": "pt"}
    body = sent.numpy().tobytes()
    cache = root / f"cache-{name}"
    result = {"model": name, "latents": list(shape), "in_process_p50_ms": _in_process(folder, z, max(8, count // 4))}
    print(name, "in process p50 ms:", round(result["in_process_p50_ms"], 1), flush=True)
    for max_batch in (1, 4):
        process, base = _serve(name, folder, max_batch, cache)
        try:
            _request(base, name, params, body)  # compiles batch 1
            if max_batch > 1:  # and the batched sizes (padded to 2 and 4), before anything is timed
                for clients in (2, 4):
                    _load(base, name, params, body, clients, 2 * clients)
            rows = result[f"max_batch_{max_batch}"] = []
            for clients in (1, 4, 16):
                rows.append(_load(base, name, params, body, clients, max(count, clients)))
                print(name, f"max batch {max_batch}:", json.dumps(rows[-1]), flush=True)
        finally:
            process.terminate()
            process.communicate(timeout=120)
    result["command_per_video_ms"] = _command(folder, z, cache, root)
    print(name, "torchax-vae decode per video ms:", round(result["command_per_video_ms"]), flush=True)
    return result


def _versions():
    import importlib.metadata as m

    return {p: m.version(p) for p in ("torch", "torchax", "jax", "diffusers", "starlette", "uvicorn")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--requests", type=int, default=16,
                        help="requests per concurrency level, at least one per client (default: 16)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores", "versions": _versions(), "results": []}
    with tempfile.TemporaryDirectory() as root:
        for name in args.models:  # each model's results are kept as soon as they are measured
            report["results"].append(bench(name, args.requests, Path(root)))
            if args.json:
                Path(args.json).write_text(json.dumps(report, indent=1))
    results = report["results"]
    for r in results:
        print(f"\n{r['model']} latents {r['latents']}: in process p50 {r['in_process_p50_ms']:.1f} ms; "
              f"torchax-vae decode per video {r['command_per_video_ms']:.0f} ms")
        print("| max batch | clients | p50 ms | p99 ms | requests/s |")
        print("|---|---|---|---|---|")
        for max_batch in (1, 4):
            for row in r[f"max_batch_{max_batch}"]:
                print(f"| {max_batch} | {row['clients']} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | "
                      f"{row['requests_per_second']:.2f} |")


if __name__ == "__main__":
    main()

"""`torchax-vae serve` under hostile load (issue 55; docs/guide/serve.md, "Hostile load"): a benchmark, never a test.

One server process (a tiny Wan folder, loopback only), first idle under good clients alone, then all at once:
  - good clients: small decodes in a loop, each answer checked against the idle run's (bit for bit);
  - large-body clients: an encode body just under --max-body-mb (NaN: refused once read), again and again;
  - stalled bodies: headers and 10 bytes, then nothing (when does the server close them?);
  - floods: bursts of requests past --max-queue.
Reports the server's peak RSS against its body budget, the good clients' p50/p99 against the idle run, when
the stalled connections were closed, and how the other requests were answered. Bounded in count and time.

    python scripts/hostile_load.py [--json out.json]
"""

import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import requests

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GOOD, LARGE, STALLED, FLOODS, BURST = 16, 8, 50, 20, 8
MAX_BODY_MB, INFLIGHT_MB, MAX_QUEUE = 32, 128, 16
SMALL = [1, 16, 2, 8, 8]  # 8 KB of float32: 5 frames of 64x64
# an encode body just under --max-body-mb and within --max-pixels (2.8e6 pixels), all NaN: read whole under the
# body budget, then refused (400) as it is parsed, so it costs memory and no device time
LARGE_SHAPE = [1, 3, 5, 744, 744]
STALL_SHAPE = [1, 16, 4, 64, 64]  # 1 MiB declared, 10 bytes sent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss(pid: int, field: str = "VmRSS") -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def start_server(folder, port):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TORCHAX_VAE_CACHE_DIR": "off"}
    command = [sys.executable, "-m", "torchax_vae", "serve", "--model", f"wan={folder}", "--port", str(port),
               "--max-body-mb", str(MAX_BODY_MB), "--max-inflight-mb", str(INFLIGHT_MB), "--max-queue", str(MAX_QUEUE),
               "--max-pixels", "5000000", "--warmup", "wan:decode:" + ",".join(map(str, SMALL)), "--log-level", "warning"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    until = time.monotonic() + 300
    while time.monotonic() < until:
        try:
            if requests.get(f"{base}/health/ready", timeout=5).ok:
                return process, base
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server did not start: {process.communicate()[1][-2000:]}")


def post(base, shape, body, timeout=120):
    params = {"shape": shape, "dtype": "float32", "output_type": "pt"}
    return requests.post(f"{base}/decode/wan", data=body, params=params, timeout=timeout)


def good_client(base, body, expected, stop, count):
    """Sequential small decodes until `stop` (or `count` done): (latencies of 200s, wrong answers, other statuses)."""
    times, wrong, other = [], 0, collections.Counter()
    while not stop.is_set() and len(times) < count:
        start = time.perf_counter()
        answer = post(base, SMALL, body)
        if answer.status_code == 200:
            times.append(time.perf_counter() - start)
            wrong += expected is not None and answer.content != expected
        else:
            other[answer.status_code] += 1
            time.sleep(0.05)
    return times, wrong, other


def large_client(base, stop):
    body, statuses = np.full(LARGE_SHAPE, np.nan, np.float32).tobytes(), collections.Counter()
    params = {"shape": LARGE_SHAPE, "dtype": "float32"}
    while not stop.is_set():
        statuses[requests.post(f"{base}/encode/wan", data=body, params=params, timeout=120).status_code] += 1
    return statuses


def stalled(base, started):
    """Headers and 10 bytes of a 1 MiB body, then nothing: (seconds until the server closed it, its status)."""
    host, port = base.removeprefix("http://").split(":")
    query = "&".join(f"shape={n}" for n in STALL_SHAPE) + "&dtype=float32"
    head = (f"POST /decode/wan?{query} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {int(np.prod(STALL_SHAPE)) * 4}"
            "\r\n\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        sock.sendall(head + b"\0" * 10)
        data = b""
        while True:
            try:
                piece = sock.recv(65536)
            except socket.timeout:
                return None, "open after 120 s"
            if not piece:
                break
            data += piece
    status = data.split(b"\r\n", 1)[0].decode(errors="replace") if data else "closed without an answer"
    return time.monotonic() - started, status


def flood(base, body, stop):
    statuses = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
        while not stop.is_set():
            for answer in pool.map(lambda _: post(base, SMALL, body), range(BURST)):
                statuses[answer.status_code] += 1
    return statuses


def percentiles(times):
    times = sorted(times)
    return {"p50_s": round(statistics.median(times), 4), "p99_s": round(times[min(len(times) - 1, int(0.99 * len(times)))], 4),
            "answers": len(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="the hostile phase's length")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from vaes import random_vae

    folder = pathlib.Path(tempfile.mkdtemp()) / "wan"
    random_vae("wan-tiny").save_pretrained(folder)
    process, base = start_server(folder, free_port())
    try:
        body = np.random.default_rng(0).standard_normal(SMALL, dtype=np.float32).tobytes()
        expected = post(base, SMALL, body).content
        # idle: the good clients alone
        stop = threading.Event()
        with concurrent.futures.ThreadPoolExecutor(GOOD) as pool:
            idle = list(pool.map(lambda _: good_client(base, body, expected, stop, 10), range(GOOD)))
        idle_times = [t for times, _, _ in idle for t in times]
        baseline = rss(process.pid)
        peak, sampling = [baseline], threading.Event()

        def sample():
            while not sampling.is_set():
                peak.append(rss(process.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(GOOD + LARGE + STALLED + FLOODS) as pool:
            stalls = [pool.submit(stalled, base, started) for _ in range(STALLED)]
            larges = [pool.submit(large_client, base, stop) for _ in range(LARGE)]
            floods = [pool.submit(flood, base, body, stop) for _ in range(FLOODS)]
            goods = [pool.submit(good_client, base, body, expected, stop, 10**9) for _ in range(GOOD)]
            time.sleep(args.seconds)
            stop.set()
            results = {"good": [f.result() for f in goods], "large": [f.result() for f in larges],
                       "flood": [f.result() for f in floods], "stalled": [f.result() for f in stalls]}
        sampling.set()
        sampler.join()
        healthy = requests.get(f"{base}/health/ready", timeout=10).status_code
    finally:
        process.terminate()
        process.communicate(timeout=60)
    busy_times = [t for times, _, _ in results["good"] for t in times]
    closed = [s for s, _ in results["stalled"] if s is not None]
    report = {
        "server": {"baseline_rss_mb": round(baseline / 2**20), "peak_rss_mb": round(max(peak) / 2**20),
                   "body_budget_mb": INFLIGHT_MB, "peak_over_baseline_mb": round((max(peak) - baseline) / 2**20),
                   "ready_after": healthy},
        "good_idle": percentiles(idle_times),
        "good_under_load": {**percentiles(busy_times), "wrong_answers": sum(w for _, w, _ in results["good"]),
                            "refused": dict(sum((o for _, _, o in results["good"]), collections.Counter()))},
        "large_bodies": dict(sum(results["large"], collections.Counter())),
        "floods": dict(sum(results["flood"], collections.Counter())),
        "stalled": {"closed": len(closed), "of": STALLED, "first_closed_s": round(min(closed), 2) if closed else None,
                    "last_closed_s": round(max(closed), 2) if closed else None,
                    "statuses": dict(collections.Counter(s for _, s in results["stalled"]))},
        "seconds": args.seconds,
    }
    report["good_under_load"]["p99_over_idle"] = round(report["good_under_load"]["p99_s"] / report["good_idle"]["p99_s"], 2)
    print(json.dumps(report, indent=1))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()

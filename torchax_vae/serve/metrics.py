"""The service's Prometheus metrics (prometheus_client), one registry per app, in base units (seconds, bytes)."""

import jax
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

PREFIX = "torchax_vae"
# Seconds: from a tiny model's milliseconds to a released video's minutes.
TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 150, 300, 600)


class DeviceMemory:
    """Bytes in use on each JAX device, where the backend reports it (TPUs and GPUs; XLA:CPU reports nothing)."""

    def describe(self):
        return []

    def collect(self):
        family = GaugeMetricFamily(f"{PREFIX}_device_memory_bytes_in_use", "Bytes in use on each JAX device",
                                   labels=["device"])
        for device in jax.local_devices():
            stats = device.memory_stats() if hasattr(device, "memory_stats") else None
            if stats and "bytes_in_use" in stats:
                family.add_metric([str(device.id)], stats["bytes_in_use"])
        yield family


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(f"{PREFIX}_requests", "Requests answered, by route, model and HTTP status",
                                ["route", "model", "code"], registry=r)
        self.rejected = Counter(f"{PREFIX}_rejected_requests", "Requests refused before the device, by reason",
                                ["reason"], registry=r)
        self.in_progress = Gauge(f"{PREFIX}_requests_in_progress", "Requests between arrival and answer", registry=r)
        self.queue_length = Gauge(f"{PREFIX}_queue_length", "Requests waiting for the device", registry=r)
        self.batch_size = Histogram(f"{PREFIX}_batch_size", "Requests per device call",
                                    buckets=(1, 2, 4, 8, 16, 32, 64), registry=r)
        self.queue_wait = Histogram(f"{PREFIX}_queue_wait_seconds", "Time from acceptance to the device",
                                    buckets=TIME_BUCKETS, registry=r)
        self.device = Histogram(f"{PREFIX}_device_seconds", "Time of each device call (a batch)", ["model", "kind"],
                                buckets=TIME_BUCKETS, registry=r)
        self.total = Histogram(f"{PREFIX}_request_seconds", "Time from the request's arrival to its answer",
                               ["route", "model"], buckets=TIME_BUCKETS, registry=r)
        self.compiles = Counter(f"{PREFIX}_compiles", "Programs compiled (or loaded from the program store)",
                                ["model"], registry=r)
        self.first_chunk = Histogram(f"{PREFIX}_first_chunk_seconds", "Time from acceptance to a decode's first "
                                     "chunk of final frames", buckets=TIME_BUCKETS, registry=r)
        self.chunks = Counter(f"{PREFIX}_chunks", "Chunks run on the device (a decode's frame chunks; an encode is "
                              "one)", registry=r)
        self.cancelled = Counter(f"{PREFIX}_cancelled_jobs", "Jobs stopped mid-way: their clients went away or "
                                 "their deadlines passed after their first chunk", registry=r)
        self.sessions_open = Gauge(f"{PREFIX}_sessions_open", "Live sessions open (WebSocket /session)", registry=r)
        self.session_chunk = Histogram(f"{PREFIX}_session_chunk_seconds", "Time from a session chunk's arrival to "
                                       "its output", buckets=TIME_BUCKETS, registry=r)
        self.session_occupancy = Histogram(f"{PREFIX}_session_batch_sessions", "Sessions per program call of the "
                                           "sessions' steps", buckets=(1, 2, 4, 8, 16, 32, 64), registry=r)
        self.sessions_closed = Counter(f"{PREFIX}_sessions_closed", "Live sessions ended, by how: finished, "
                                       "disconnect, timeout, shutting_down", ["how"], registry=r)
        self.ready = Gauge(f"{PREFIX}_ready", "1 when every model is loaded and warmed up", registry=r)
        r.register(DeviceMemory())

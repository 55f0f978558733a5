"""How much memory a program may use: what the device reports free, or the host's available memory."""

import os

import jax


def device_free_bytes(device) -> int | None:
    """bytes_limit - bytes_in_use from `device.memory_stats()`, where the backend reports them (GPU, TPU).

    None for a device that reports nothing, or cannot (an abstract device of a topology: torchax_vae.targets).
    """
    try:
        stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    except jax.errors.JaxRuntimeError:  # "MemoryStats is only supported for addressable PjRt devices"
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def proc_bytes(path: str, field: str) -> int | None:
    """A "FIELD:  N kB" line of a Linux /proc file (/proc/meminfo, /proc/self/status) in bytes, or None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else free physical pages; None if neither is known."""
    available = proc_bytes("/proc/meminfo", "MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def free_bytes(device) -> int | None:
    """What a program on `device` may allocate: the device's own report, or for CPU the host's."""
    reported = device_free_bytes(device)
    if reported is not None:
        return reported
    return host_available_bytes() if device.platform == "cpu" else None

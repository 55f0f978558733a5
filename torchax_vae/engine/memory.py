"""How much memory a program may use: what the device reports free, or the host's available memory."""

import os

import jax


def device_free_bytes(device) -> int | None:
    """bytes_limit - bytes_in_use from `device.memory_stats()`, where the backend reports them (GPU, TPU).

    None for a device that reports nothing, or cannot (an abstract device of a topology: torchax_vae.plan.targets).
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


def call_bytes(used, carried: int = 0) -> int:
    """Device memory a call needs, by the one rule "auto" tiling decides with, for every family.

    used: the `ProgramStats` of the programs the call runs (compiled for its shapes). The peak is the largest
    program with everything it holds while it runs: XLA's temp buffers, its arguments (weights, input, the
    cache it carries in) and its outputs (result, the cache it carries out); plus `carried`, the bytes that stay
    live across programs without being that program's arguments (CogVideoX's layer programs: every layer's
    conv_cache, held from its program to the next frame batch). Arguments count because they are on the
    device while the program runs; a rule without them (CogVideoX's before 2026-11-25) understated a call
    by its weights.
    """
    return max(s.temp_bytes + s.argument_bytes + s.output_bytes for s in used) + carried

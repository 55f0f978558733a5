"""Compiled XLA programs keyed by input signature, with what XLA says about each.

Each encoder/decoder frame-batch call is a pure JAX function of
(weights, input, conv_cache). `Programs` lowers and compiles it once per
signature (tree structure, shapes, dtypes, shardings of the arguments) and
records the compile time, FLOPs and memory XLA reports, so a user can see why
memory or compile time is what it is without running anything.
"""

import collections
import contextlib
import dataclasses
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import jax

from torchax_vae.engine.arrays import is_abstract

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ProgramStats:
    """What one compiled program costs, as XLA reports it."""

    name: str
    input_shapes: tuple  # per non-weight argument: its shape, None, or 'pytree of N arrays'
    lower_seconds: float  # tracing the torch model through torchax to StableHLO
    compile_seconds: float  # XLA compilation of that StableHLO
    devices: tuple[str, ...]
    flops: float
    temp_bytes: int  # per device
    argument_bytes: int
    output_bytes: int
    from_store: bool = False  # loaded from the program store (torchax_vae/engine/stored.py) instead of traced


def _traced(tree) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(tree))


def _leaf_signature(leaf) -> tuple:
    sharding = getattr(leaf, "sharding", None)
    return (tuple(leaf.shape), str(leaf.dtype), sharding)


def _describe(arg):
    if arg is None:
        return None
    if hasattr(arg, "shape"):
        return tuple(arg.shape)
    return f"pytree of {len(jax.tree.leaves(arg))} arrays"


def lowering_platform(args) -> str:
    """The JAX lowering platform ("cpu", "tpu", "cuda", "rocm") of the devices `args` are (to be) placed on:
    this machine's, or a planning target's abstract ones."""
    devices = {d for leaf in jax.tree.leaves(args) if getattr(leaf, "sharding", None) is not None
               for d in leaf.sharding.device_set}
    platforms = {d.platform for d in devices}
    if len(platforms) > 1:
        raise ValueError(f"one program's arguments are on devices of several platforms: {sorted(platforms)}")
    platform = platforms.pop() if platforms else jax.default_backend()
    if platform == "gpu":  # a GPU device says "gpu"; lowering names its vendor's backend
        amd = any("AMD" in getattr(d, "device_kind", "") or "Instinct" in getattr(d, "device_kind", "") for d in devices)
        return "rocm" if amd else "cuda"
    return platform


def _cost(compiled) -> dict:
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):  # older jax: one dict per computation
        cost = cost[0] if cost else {}
    return cost or {}


# (StableHLO text, pytrees, shardings) -> compiled program, shared by every Programs in the process.
# Shared while any TorchaxVAE holds it (_LIVE, weak: each keeps its own programs in Programs._compiled), and the
# SHARED_LIMIT most recently used besides (_RECENT), for a TorchaxVAE made after another one is gone.
# Bounded because a compiled program holds host memory, and on CPU its machine code: XLA:CPU maps each of a
# program's kernels in pages of their own, and a process has at most vm.max_map_count (65530) mappings. At 512
# kept programs, CI's slow suite (one process) reached 63,000 mappings and XLA crashed in a compile (SIGSEGV).
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_RECENT: collections.OrderedDict[tuple, Any] = collections.OrderedDict()
SHARED_LIMIT = 32
_SHARED_LOCK = threading.Lock()  # guards the two tables, never held while XLA compiles


def clear_shared() -> int:
    """Forgets the process-wide table of compiled programs (live TorchaxVAEs keep theirs); how many it held."""
    with _SHARED_LOCK:
        count = len(set(_LIVE.keys()) | set(_RECENT))
        _LIVE.clear()
        _RECENT.clear()
    return count


def _shared_compile(key: tuple, lowered, options: dict):
    with _SHARED_LOCK:
        compiled = _LIVE.get(key)
    if compiled is None:  # compiled outside the lock: another thread's compile of another program goes on
        made = lowered.compile(compiler_options=options or None)
        with _SHARED_LOCK:  # two threads that compiled the same module keep the first, so both share one
            compiled = _LIVE.setdefault(key, made)
    with _SHARED_LOCK:
        _RECENT[key] = compiled
        _RECENT.move_to_end(key)
        while len(_RECENT) > SHARED_LIMIT:
            _RECENT.popitem(last=False)
    return compiled


@dataclasses.dataclass(frozen=True)
class _Entry:
    compiled: Any
    stats: ProgramStats
    out_info: Any  # the outputs as jax.ShapeDtypeStruct


class Programs:
    """A cache of compiled programs; call `run(name, fn, weights, *args)`.

    Arguments given as jax.ShapeDtypeStruct (with the sharding the real array
    will have) compile the program without running it; `run` then returns the
    outputs' ShapeDtypeStructs, so a caller can plan a whole call abstractly.

    Threads: calls from several threads share the compiled programs. A program is
    compiled once (a thread that needs one being compiled waits for it; one whose
    programs exist never waits). Tracing holds one lock per cache, because the
    traced diffusers modules keep state in their attributes during a forward (Wan's
    `_feat_map`); XLA's compilation runs outside it. What `recording`, `executions`
    and `probe` collect is the calling thread's own.
    """

    def __init__(self, store=None):
        self.store = store  # a stored.ProgramStore, or None: trace every program in this process
        # Gradients (TorchaxVAE's autograd bridge, torchax_vae/engine/gradients.py) call programs with JAX tracers; those
        # calls go to one jitted function per program name, rematerialized in the backward pass when `checkpoint`.
        self.checkpoint = False
        self._for_gradients: dict[tuple[str, bool], Callable] = {}
        self._compiled: dict[tuple, _Entry] = {}
        self._by_text: set[tuple] = set()  # the keys of _LIVE this cache's programs use
        self._local = threading.local()  # per thread: its recordings, executions and probe depth
        self._lock = threading.Lock()  # guards _compiled and _compiling
        self._compiling: dict[tuple, threading.Lock] = {}  # one lock per program being compiled
        self._trace_lock = threading.RLock()  # one trace at a time (the class doc)
        self.compiler_options: dict = {}  # XLA's, for every compile (TorchaxVAE.compile_effort)

    @property
    def _recording(self) -> list[list[ProgramStats]]:
        if not hasattr(self._local, "recording"):
            self._local.recording = []
        return self._local.recording

    @property
    def _executing(self) -> list[list[ProgramStats]]:
        if not hasattr(self._local, "executing"):
            self._local.executing = []
        return self._local.executing

    @property
    def probing(self) -> int:
        """> 0 while this thread's calls only size a decision ("auto" tiling's memory check, `probe`)."""
        return getattr(self._local, "probing", 0)

    @contextlib.contextmanager
    def recording(self):
        """Collects the stats of every program run or compiled inside, once each, in first-use order."""
        used: list[ProgramStats] = []
        self._recording.append(used)
        try:
            yield used
        finally:  # by identity: a nested recording may hold equal entries
            self._recording[:] = [other for other in self._recording if other is not used]

    @contextlib.contextmanager
    def executions(self):
        """Collects the stats of every program run inside, once per run (not for abstract calls)."""
        runs: list[ProgramStats] = []
        self._executing.append(runs)
        try:
            yield runs
        finally:
            self._executing[:] = [other for other in self._executing if other is not runs]

    @contextlib.contextmanager
    def probe(self):
        """Inside: calls that size a decision (TorchaxVAE._should_tile), not the call being run or planned."""
        self._local.probing = self.probing + 1
        try:
            yield
        finally:
            self._local.probing -= 1

    def run(self, name: str, fn: Callable, weights, *args):
        if _traced(args):  # inside jax.vjp: a call JAX differentiates, so a jitted function, not an executable
            with self._trace_lock:  # it traces the diffusers modules (the class doc)
                return self._differentiable(name, fn)(weights, *args)
        entry = self._entry(name, fn, weights, args)
        if is_abstract(args):
            return entry.out_info
        for runs in self._executing:
            runs.append(entry.stats)
        return entry.compiled(weights, *args)

    def _differentiable(self, name: str, fn: Callable) -> Callable:
        """The jitted `fn` of program `name` (the same name always names the same computation, as in `_entry`).

        jit keeps one trace per input signature, and JAX caches the forward and
        transposed programs it derives from it, so repeated gradients of one shape
        trace and compile nothing new. With `checkpoint` only the program's inputs
        are kept for the backward pass, which runs the program again (diffusers'
        gradient checkpointing, at the granularity of one program).
        """
        key = (name, self.checkpoint)
        jitted = self._for_gradients.get(key)
        if jitted is None:
            jitted = jax.jit(jax.checkpoint(fn) if self.checkpoint else fn, keep_unused=True)
            self._for_gradients[key] = jitted
        return jitted

    def compile(self, name: str, fn: Callable, weights, *args) -> ProgramStats:
        """Compiles (once) without running; what XLA reports about the program."""
        return self._entry(name, fn, weights, args).stats

    def _entry(self, name, fn, weights, args) -> _Entry:
        key = (name, jax.tree.structure((weights, args)), tuple(map(_leaf_signature, jax.tree.leaves((weights, args)))))
        entry = self._compiled.get(key)
        if entry is None:
            with self._lock:
                compiling = self._compiling.setdefault(key, threading.Lock())
            with compiling:  # the first thread compiles; one that asks meanwhile waits for it, then finds it
                entry = self._compiled.get(key)
                if entry is None:
                    entry = self._compile(name, fn, weights, args)
                    with self._lock:
                        self._compiled[key] = entry
                        self._compiling.pop(key, None)
        for used in self._recording:
            if not any(stats is entry.stats for stats in used):
                used.append(entry.stats)
        return entry

    def _compile(self, name, fn, weights, args) -> _Entry:
        t0 = time.perf_counter()
        lowered, from_store = self._lower(name, fn, (weights, *args))
        t1 = time.perf_counter()
        # Programs that lower to the same module share one compilation: alike layers of torchax_vae.engine.staging,
        # and the same programs of another TorchaxVAE of the same architecture in this process. Also keyed:
        # the argument and result pytrees (the compiled object checks and rebuilds them) and the shardings
        # (which devices it runs on).
        shardings = tuple(getattr(leaf, "sharding", None) for leaf in jax.tree.leaves((weights, args)))
        same = (lowered.as_text(), lowered.in_tree, lowered.out_tree, shardings,
                tuple(sorted(self.compiler_options.items())))
        compiled = _shared_compile(same, lowered, self.compiler_options)
        self._by_text.add(same)
        t2 = time.perf_counter()
        memory = compiled.memory_analysis()
        devices = sorted({str(d) for leaf in jax.tree.leaves((weights, args)) for d in leaf.sharding.device_set})
        stats = ProgramStats(
            name=name,
            input_shapes=tuple(map(_describe, args)),
            lower_seconds=t1 - t0,
            compile_seconds=t2 - t1,
            devices=tuple(devices),
            flops=float(_cost(compiled).get("flops", float("nan"))),
            temp_bytes=int(getattr(memory, "temp_size_in_bytes", -1)),
            argument_bytes=int(getattr(memory, "argument_size_in_bytes", -1)),
            output_bytes=int(getattr(memory, "output_size_in_bytes", -1)),
            from_store=from_store,
        )
        out_info = jax.tree.map(
            lambda info, sharding: jax.ShapeDtypeStruct(info.shape, info.dtype, sharding=sharding),
            lowered.out_info,
            compiled.output_shardings,
        )
        return _Entry(compiled, stats, out_info)

    def _lower(self, name, fn, args):
        """(fn lowered for args, whether it came from the store).

        keep_unused: every argument is in the module text, so equal text means an equal program (`_compile`).
        With a store the program is exported (or loaded), and what is compiled is the export's call either way,
        so a traced and a stored program compile to the same executable.
        """
        with self._trace_lock:
            return self._lower_unlocked(name, fn, args)

    def _lower_unlocked(self, name, fn, args):
        if self.store is None:
            return jax.jit(fn, keep_unused=True).lower(*args), False
        platform = lowering_platform(args)  # the devices the arguments are on: this machine's, or a target's
        exported = self.store.load(name, args, platform)
        from_store = exported is not None
        if not from_store:
            try:
                exported = jax.export.export(jax.jit(fn, keep_unused=True), platforms=(platform,))(*args)
            except Exception as error:  # noqa: BLE001 (a program jax.export refuses still runs, unstored)
                logger.warning("torchax_vae: program %s cannot be exported (%s); it is not stored", name, error)
                return jax.jit(fn, keep_unused=True).lower(*args), False
            self.store.save(name, args, exported, platform)
        return jax.jit(exported.call, keep_unused=True).lower(*args), from_store

    def stats(self) -> list[dict]:
        return [dataclasses.asdict(entry.stats) for entry in self._compiled.values()]

    def __len__(self) -> int:
        return len(self._compiled)


class LoweredOnly(Programs):
    """`Programs` that trace and lower for `platform` without compiling (`TorchaxVAE.lower`); abstract calls only.

    Its stats carry the lowering time and nothing XLA would report after compiling (NaN FLOPs, zero bytes).
    """

    def __init__(self, platform: str):
        super().__init__()
        self.platform = platform
        self.texts: dict[str, str] = {}  # program name -> StableHLO, first lowering of each name

    def _compile(self, name, fn, weights, args) -> _Entry:
        t0 = time.perf_counter()
        # a new function object: jit would otherwise reuse a trace of `fn` made for another platform (and keep
        # this one for the next real compile of `fn`)
        traced = jax.jit(functools.partial(fn), keep_unused=True).trace(weights, *args)
        lowered = traced.lower(lowering_platforms=(self.platform,))
        self.texts.setdefault(name, lowered.as_text())
        stats = ProgramStats(
            name=name, input_shapes=tuple(map(_describe, args)), lower_seconds=time.perf_counter() - t0,
            compile_seconds=0.0, devices=(self.platform,), flops=float("nan"), temp_bytes=0, argument_bytes=0,
            output_bytes=0,
        )
        return _Entry(None, stats, traced.out_info)

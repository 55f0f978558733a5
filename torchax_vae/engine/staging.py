"""One frame batch as a chain of programs, one per layer group, so that no program holds a whole batch.

One program per encoder/decoder frame batch leaves XLA to plan every
activation of the batch at once, and XLA:CPU's schedulers keep dozens of
activation-sized buffers live (113.8 GB for one 480x720 decoder batch on the
memory scheduler, docs/results/performance.md, "Memory"). Split into stages, what one program can
hold is bounded by one stage: its inputs, its activations, its output.

The stages (`plan`): each top-level layer of the encoder or decoder, each
resnet and sampler of its blocks, and within a resnet block each convolution
(conv1, conv2, conv_shortcut) together with the norm and activation before it
(the "glue" between stage calls runs in the program of the stage after it).

diffusers' forward still runs, unmodified, in every stage's program. The stage
modules' forwards are wrapped (`install`) so that while stage (k, j) is traced
(top-level stage k; j its sub-stage, or None), the top-level stages before k
return `given` (stage k-1's output, an argument of the program; earlier stages'
copies of it are dead code that XLA drops), the sub-stages of k before j return
`handed` (sub-stage j-1's output), stage (k, j) runs with its own conv_cache,
and the call after it ends the trace. A resnet's own input is `given`, so its
residual sum sees the real value in every sub-stage's program.
Outside `run` the wrapped modules behave as before.
"""

import contextvars
import dataclasses
import functools
from typing import Any

from torch import nn


@dataclasses.dataclass(frozen=True)
class Split:
    """Where a family's layer programs are cut (the adapter says; e.g. models.cogvideox.STAGES).

    blocks: top-level stage classes that run as one program per convolution;
    convs: the children of such a block that are each a sub-stage.
    """

    blocks: tuple[type, ...]
    convs: tuple[type, ...]


@dataclasses.dataclass(frozen=True)
class Stage:
    """Top-level stage `index` (module `path`, relative to the encoder or decoder), or its sub-stage `sub`."""

    index: int
    path: str
    sub: int | None = None
    sub_path: str | None = None
    last_sub: bool = True  # the top-level stage's output is this program's output

    @property
    def name(self) -> str:
        return f"stage{self.index:02d}" + ("" if self.sub is None else f".{self.sub}")


class _Stop(Exception):
    """Raised at the stage call after the traced one: the rest of the forward is not this program's."""


@dataclasses.dataclass
class _Trace:
    stage: Stage
    paths: list[str]  # top-level stage paths, in call order
    subs: list[str]  # sub-stage paths of the traced top-level stage
    given: Any
    handed: Any
    cache: Any
    calls: int = 0
    sub_calls: int = 0
    output: Any = None  # what the traced top-level stage returned (when it returned)
    sub_output: Any = None


# A context variable, not an argument: the stage being traced is read inside diffusers' own forward (its layers'
# patched calls), which takes no argument of ours; set only while one stage's program traces.
_ACTIVE: contextvars.ContextVar[_Trace | None] = contextvars.ContextVar("torchax_vae_stage", default=None)


def _top_paths(root: nn.Module) -> list[str]:
    """Names, relative to root, of its top-level stage modules in registration order.

    A child holding ModuleLists (a block: resnets, samplers) is split into their
    elements; a ModuleList into its elements; any other child is one stage.
    """
    paths = []

    def visit(module: nn.Module, prefix: str) -> None:
        for name, child in module.named_children():
            if isinstance(child, nn.ModuleList) or any(isinstance(c, nn.ModuleList) for c in child.children()):
                visit(child, f"{prefix}{name}.")
            else:
                paths.append(f"{prefix}{name}")

    visit(root, "")
    return paths


def _sub_paths(root: nn.Module, path: str, split: Split) -> list[str]:
    module = root.get_submodule(path)
    if not isinstance(module, split.blocks):
        return []
    return [f"{path}.{name}" for name, child in module.named_children() if isinstance(child, split.convs)]


def plan(root: nn.Module, split: Split) -> list[Stage]:
    """The stages of root (an encoder or decoder), in the order its forward calls them."""
    stages = []
    for index, path in enumerate(_top_paths(root)):
        subs = _sub_paths(root, path, split)
        if len(subs) < 2:
            stages.append(Stage(index, path))
        else:
            stages += [Stage(index, path, j, sub, j == len(subs) - 1) for j, sub in enumerate(subs)]
    return stages


def install(root: nn.Module, split: Split) -> list[Stage]:
    """Wraps the forward of each of root's stage modules (root is a private copy); returns `plan(root, split)`."""
    stages = plan(root, split)
    for path in dict.fromkeys(s.path for s in stages):
        module = root.get_submodule(path)
        module.forward = functools.partial(_top_forward, module.forward, path)
    for stage in stages:
        if stage.sub_path is not None:
            module = root.get_submodule(stage.sub_path)
            module.forward = functools.partial(_sub_forward, module.forward, stage.sub_path)
    return stages


def _check_order(expected: list[str], i: int, path: str) -> None:
    if i >= len(expected) or expected[i] != path:
        want = expected[i] if i < len(expected) else "no more stages"
        raise RuntimeError(f"stage call {i} is {path}, expected {want}: the forward calls its layers in another order")


def _call(forward, path, args, kwargs, expected, position, traced, stand_in, cache):
    """The `position`-th call of a stage module (at `expected[position]`) while stage `traced` of that level is traced.

    Before it: `stand_in` replaces the module's output; after it: the trace ends;
    at it: the module runs, with `cache` as its conv_cache. Returns the output.
    """
    _check_order(expected, position, path)
    cached = "conv_cache" in kwargs  # diffusers' convention: a layer called with a conv_cache returns (output, cache)
    if position < traced:
        return (stand_in, None) if cached else stand_in
    if position > traced:
        raise _Stop
    if cached:
        kwargs["conv_cache"] = cache
    return forward(*args, **kwargs)


def _top_forward(forward, path, *args, **kwargs):
    trace = _ACTIVE.get()
    if trace is None:
        return forward(*args, **kwargs)
    trace.calls += 1
    # a split stage's sub-stages get their caches from _sub_forward
    cache = trace.cache if trace.stage.sub is None else None
    output = _call(forward, path, args, kwargs, trace.paths, trace.calls - 1, trace.stage.index, trace.given, cache)
    if trace.calls - 1 == trace.stage.index:
        trace.output = output
    return output


def _sub_forward(forward, path, *args, **kwargs):
    trace = _ACTIVE.get()
    if trace is None:
        return forward(*args, **kwargs)
    trace.sub_calls += 1
    output = _call(forward, path, args, kwargs, trace.subs, trace.sub_calls - 1, trace.stage.sub, trace.handed,
                   trace.cache)
    if trace.sub_calls - 1 == trace.stage.sub:
        trace.sub_output = output
    return output


def _split(output):
    return output if isinstance(output, tuple) else (output, None)


def _leaves_none(cache) -> bool:
    if isinstance(cache, dict):
        return all(_leaves_none(v) for v in cache.values())
    return cache is None


def run(stages: list[Stage], stage: Stage, given, handed, cache, forward):
    """Traces `stage` of `forward()` (a call of the root module): (its output, its new conv_cache).

    given: the previous top-level stage's output; handed: the previous
    sub-stage's output (None when stage.sub is 0 or None); cache: this stage's
    conv_cache from the previous frame batch (None for the first).
    """
    paths = list(dict.fromkeys(s.path for s in stages))
    subs = [s.sub_path for s in stages if s.index == stage.index and s.sub_path is not None]
    trace = _Trace(stage, paths, subs, given, handed, cache)
    token = _ACTIVE.set(trace)
    try:
        result = forward()
        finished = True
    except _Stop:
        finished = False
    finally:
        _ACTIVE.reset(token)
    last = stage.index == len(paths) - 1 and stage.last_sub
    if finished != last or (finished and trace.calls != len(paths)):
        raise RuntimeError(
            f"{stage.name} of {len(paths)}: the forward made {trace.calls} stage calls and "
            f"{'returned' if finished else 'went on'}; each stage module must be called once"
        )
    if stage.sub is None:
        return _split(result)[0] if last else _split(trace.output)[0], _split(trace.output)[1]
    output, new_cache = _split(trace.sub_output)
    if stage.last_sub:
        top_output, top_cache = _split(trace.output)
        if not _leaves_none(_without(top_cache, subs, stage.path)):
            raise RuntimeError(f"{stage.path} carries a conv_cache outside its convolutions; it cannot be split")
        output = _split(result)[0] if last else top_output
    return output, new_cache


def _without(cache, subs, path):
    """A split stage's returned cache without its sub-stages' own entries (which the sub-stage programs carry)."""
    if not isinstance(cache, dict):
        return cache
    own = {sub.removeprefix(path + ".") for sub in subs}
    return {k: v for k, v in cache.items() if k not in own}


def weights_of(path: str, weights: dict) -> dict:
    """The entries of a root module's weights (name -> array) that belong to the module at path, named relative to it.

    Relative names make the programs of two alike layers (same shapes, other
    weights) the same program, which `Programs` then compiles once.
    """
    prefix = path + "."
    return {name.removeprefix(prefix): w for name, w in weights.items() if name.startswith(prefix)}


def rooted(path: str, weights: dict) -> dict:
    """`weights_of`'s names made relative to the root module again."""
    return {f"{path}.{name}": w for name, w in weights.items()}

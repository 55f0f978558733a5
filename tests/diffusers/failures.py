"""What an expected failure of diffusers' vendored tests must look like (issue 56): never "any failure".

- A test expected to fail in both runs (`FAIL_IN_BOTH_RUNS`) runs on plain diffusers first, in the wrapped run's own
  process (the VAE left unwrapped: `wrapping.paused()`), then wrapped. It counts as the expected failure only when
  both fail the same way: the same exception type, the same message (numbers, addresses and temporary paths masked),
  and the same arrays in the failing frames (the innermost in the test's file, and the innermost below it in any
  vendored file: test_pipelines_common.py's mixins, testing_utils.py's comparisons; a pipeline output's arrays
  included) within the output tolerance, and the numbers
  the mask hid, integers equal and others within a factor of `FACTOR` of plain diffusers' (a batch test's 1.13e-4
  against 1.03e-4 passes; a difference of another size, or a shape or index that is not the same, fails).
  A test whose hard-coded slice fails on plain diffusers is so checked against plain diffusers' own output.
  Where only the arrays differ, the test runs a third time with plain diffusers' VAE computing in float64
  (`wrapping.float64()`), and the wrapped arrays must equal that run's: the tests whose input leaves plain
  diffusers' float32 VAE far from exact arithmetic (an all-masked inpainting image: a constant channel, whose
  GroupNorm divides rounding error by sqrt(eps)) are judged by the exact result, never by a looser tolerance.
- A test expected to fail only wrapped (`EXPECTED_FAILURES`) must raise its reason's recorded exception type with a
  message that matches its recorded pattern (`expectations.RAISES`); in the plain run, a test expected to fail
  there must so match `expectations.PLAIN_RAISES`.

Anything else is reported as a failure that says what differed (conftest.py's report hook).
"""

import dataclasses
import re

import numpy as np

# the output tolerance (test_pipeline_outputs.py's): 1e-4 of the plain array's scale, at least 1e-4 absolute
RELATIVE = 1e-4
_NUMBER = re.compile(r"0x[0-9a-fA-F]+|[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")
# the numbers of a message (the mask's, less addresses), compared pairwise: integers (sizes, counts, indices) equal,
# others within this factor
# (two numbers within 1e-4 of each other, the output tolerance, are the same whatever their ratio)
FACTOR, FLOOR = 2.0, 1e-4
_TEMPORARY = re.compile(r"/tmp/\S+|/var/folders/\S+")


@dataclasses.dataclass
class Failure:
    type: str  # the exception's class name ("" where the test passed)
    message: str  # its first 500 characters, masked
    arrays: dict  # name -> float64 array: the tensors and arrays of the failing frame (`_arrays`)
    numbers: tuple = ()  # the message's numbers, which `message` masks (`numbers_of`)


def masked(message: str) -> str:
    """The message with numbers, temporary paths and pytest's assertion explanations ("+  where x = repr(...)",
    which name the model by its repr: a TorchaxVAE's differs from diffusers' module tree by design) masked, and the
    strings of a set shown in order (a set's order changes from one process to the next), and runs of white space
    as one space."""
    kept = "\n".join(line for line in message.splitlines() if not _EXPLANATION.match(line))
    kept = _STRING_SET.sub(lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", kept)
    spaced = _SPACES.sub(" ", _NUMBER.sub("#", _TEMPORARY.sub("<tmp>", kept)))
    return spaced.replace("[ ", "[").replace(" ]", "]")[:500]


_EXPLANATION = re.compile(r"^\s*\+\s")
_SPACES = re.compile(r"\s+")  # (numpy pads the numbers of a printed array to their widths)
_STRING_SET = re.compile(r"\{('[^',]*'(?:, '[^',]*')+)\}")


def failure_of(excinfo, test_file: str) -> Failure:
    """The Failure of a pytest ExceptionInfo (None: the test passed)."""
    if excinfo is None:
        return Failure("", "", {})
    error = excinfo.value
    return Failure(type(error).__name__, masked(str(error)), _arrays(error.__traceback__, test_file),
                   numbers_of(str(error)))


def numbers_of(message: str) -> tuple:
    """The first 50 numbers of what `masked` keeps of a message (pytest's explanation lines and temporary paths left
    out, as there; addresses too)."""
    kept = "\n".join(line for line in message.splitlines() if not _EXPLANATION.match(line))
    found = (m.group() for m in _NUMBER.finditer(_TEMPORARY.sub("", kept)))
    return tuple(int(n) if n.lstrip("+-").isdigit() else float(n) for n in found if not n.lower().startswith("0x"))[:50]


def numbers_differ(theirs: tuple, ours: tuple) -> list[str]:
    """The pairs of a message's numbers further apart than FACTOR (both above FLOOR), as lines for a report."""
    if len(theirs) != len(ours):
        return [f"the message has {len(ours)} numbers wrapped, {len(theirs)} on plain diffusers"]
    far = [(a, b) for a, b in zip(theirs, ours) if not (a == b if isinstance(a, int) and isinstance(b, int) else (
        abs(a - b) <= FLOOR or (a * b > 0 and max(abs(a), abs(b)) <= FACTOR * min(abs(a), abs(b)))))]
    return [f"its message's numbers differ (integers: at all; others: beyond a factor of {FACTOR:g}): " + ", ".join(
        f"{b:.4g} wrapped against {a:.4g}" for a, b in far[:5])] if far else []


def _arrays(traceback, test_file: str) -> dict:
    """The floating-point tensors and arrays of the failing frames: the innermost one in the test's file, and the
    innermost one in any vendored file (a mixin of test_pipelines_common.py, testing_utils.py's comparisons),
    named after its function."""
    vendored = test_file.split("/tests/diffusers/tests/")[0] + "/tests/diffusers/tests/"
    own = inner = None  # (a test a mixin defines, test_inference_batch_single_identical, has no frame in its file)
    while traceback is not None:
        name = traceback.tb_frame.f_code.co_filename
        if name == test_file:
            own = traceback.tb_frame
        if name == test_file or name.startswith(vendored):
            inner = traceback.tb_frame
        traceback = traceback.tb_next
    found = _frame_arrays(own)
    if inner is not None and inner is not own:
        found.update({f"{inner.f_code.co_name}: {label}": array for label, array in _frame_arrays(inner).items()})
    return found


def _frame_arrays(frame) -> dict:
    import torch

    found = {}
    for name, value in (frame.f_locals if frame is not None else {}).items():
        # a pipeline's output (diffusers' BaseOutput, a dict) or a tuple of them: its arrays, one level down
        items = ((f"{name}.{key}", item) for key, item in value.items()) if isinstance(value, dict) else (
            (f"{name}[{i}]", item) for i, item in enumerate(value)) if isinstance(value, (tuple, list)) else (
            (name, value),)
        for label, item in items:
            if isinstance(item, torch.Tensor) and item.is_floating_point():
                found[label] = item.detach().float().cpu().numpy().astype(np.float64)
            elif isinstance(item, np.ndarray) and np.issubdtype(item.dtype, np.floating):
                found[label] = item.astype(np.float64)
    return found


def differences(plain: Failure, wrapped: Failure, evidence: bool = True, referee: Failure | None = None) -> list[str]:
    """How the wrapped run's failure differs from plain diffusers' (empty: the same failure). With `evidence`
    (this project's own expected failures), a failure whose arrays are all near-constant is refused as no evidence;
    without (a test under diffusers' own xfail mark, which this harness only holds to plain diffusers' failure), it
    is compared as any.

    With a `referee` (the test run a third time, plain diffusers' VAE computing in float64: conftest.py runs it where
    only the arrays differ), the arrays are compared with the referee's instead: the wrapped output must equal exact
    arithmetic's within the tolerance, where plain diffusers' float32 VAE is itself that far from it."""
    if not plain.type:
        return ["it passes on plain diffusers now: take it off FAIL_IN_BOTH_RUNS (expectations.py)"]
    if not wrapped.type:
        return [f"it passes wrapped, where plain diffusers fails with {plain.type}: {plain.message[:200]}"]
    found = []
    for run, failure in (("wrapped", wrapped), ("with its VAE in float64", referee)):
        if failure is not None and (plain.type, plain.message) != (failure.type, failure.message):
            found.append(f"plain diffusers fails with {plain.type}: {plain.message[:300]!r}; {run} with "
                         f"{failure.type or 'nothing (it passes)'}: {failure.message[:300]!r}")
    reference, against = (plain, "plain diffusers'") if referee is None else (
        referee, "plain diffusers' with its VAE in float64")
    if not found:  # the same message, masked: its numbers, with the reference's
        found += numbers_differ(reference.numbers, wrapped.numbers)
    common = sorted(reference.arrays.keys() & wrapped.arrays.keys())
    flat = [name for name in common if reference.arrays[name].size > 16 and reference.arrays[name].std() < 1e-6]
    if evidence and flat and len(flat) == sum(reference.arrays[name].size > 16 for name in common):
        found.append(f"{', '.join(flat)}: near-constant on {against}: no evidence")
    for name in common:
        ours, theirs = wrapped.arrays[name], reference.arrays[name]
        if ours.shape != theirs.shape:
            found.append(f"{name}: shape {ours.shape} wrapped, {theirs.shape} on {against}")
            continue
        tolerance = RELATIVE * max(1.0, 10 * float(theirs.std()))
        delta = float(np.abs(ours - theirs).max()) if ours.size else 0.0
        if not delta <= tolerance:
            found.append(f"{name}: max |Δ| {delta:.3g} against {against} (tolerance {tolerance:.3g})")
    return found


def only_values_differ(plain: Failure, wrapped: Failure) -> bool:
    """Whether the two runs fail the same way but for their arrays' values (where a referee may settle it)."""
    found = differences(plain, wrapped)
    return bool(found) and all(" against plain diffusers' (tolerance " in problem for problem in found)


def matches_recorded(excinfo, raises: tuple[type, ...], pattern: str) -> str | None:
    """None where the failure is the recorded one; else what it was instead."""
    if excinfo is None:
        return "it passes now: take it off its list of expected failures (expectations.py)"
    error = excinfo.value
    if isinstance(error, raises) and re.search(pattern, str(error)):
        return None
    names = " or ".join(t.__name__ for t in raises)
    return (f"expected {names} matching {pattern!r}, got {type(error).__name__}: {str(error)[:300]!r}")

"""The family contract's checks, for every row of cases.py: TorchaxVAE against the same diffusers model in PyTorch.

Every comparison goes through `close`: fp32 within min(1e-4, 5e-5 x the reference's peak), so that a 0.02 % error
fails wherever the output is; the failure prints the measured max |Δ|. Under the mutation check
(`TORCHAX_VAE_MUTATE=2e-4`: torchax_vae/engine/convert.py scales every float result TorchaxVAE hands out) each
comparison must fail instead, and `close` asserts that it does (a reference of all zeros, which no scaling moves,
is exempt). CI runs the contract both ways.

Each test file runs the rows of one kind (video, images, sound), so that pytest-xdist spreads them over both cores;
a row's PyTorch model and its TorchaxVAE are built once per file and shared by its checks (one compile per shape).
"""

import functools
import inspect
import json
import os
import pathlib

import pytest
import torch

from contract.cases import CASES
from helpers import random_vae  # (helpers puts scripts/ on sys.path: vaes)
from vaes import decode_args, requires
from torchax_vae import TorchaxVAE, registry
from torchax_vae.engine import convert

MUTATION = convert.MUTATION
# where a run writes each comparison's measured max |Δ| (scripts/contract_table.py: docs/results/parity.md)
RECORD = os.environ.get("TORCHAX_VAE_CONTRACT_RECORD")


def rows(kind: str, applies=lambda row: True) -> list:
    """The contract's rows of one registry kind that a check applies to, as pytest parameters (a class the
    installed diffusers lacks: skipped, with its reason)."""
    out = []
    for row in registry.ROWS:
        if row.kind != kind or not applies(row):
            continue
        reason = requires(CASES[row.diffusers_class].model)
        out.append(pytest.param(row.diffusers_class, id=row.diffusers_class,
                                marks=pytest.mark.skip(reason=reason) if reason else ()))
    return out


@functools.cache
def pair(name: str):
    """(diffusers' model, TorchaxVAE of it) for a row, built once per test process."""
    vae = random_vae(CASES[name].model).eval()
    ours = TorchaxVAE(vae)
    if CASES[name].tiled:
        vae.enable_tiling()
    for key, value in CASES[name].settings.items():  # (LTX's frame windows: off by default in both)
        setattr(vae, key, value)
        setattr(ours, key, value)
    return vae, ours


def randn(*shape, seed=1) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> float:
    """max |actual - expected| within `tolerance(expected)` (under the mutation check: beyond it); returns it."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    worst = (actual.detach().float() - expected.detach().float()).abs().max().item()
    return judge(worst, expected.detach().abs().max().item(), what)


def judge(worst: float, peak: float, what: str) -> float:
    """A comparison's max |Δ| against its tolerance, min(1e-4, 5e-5 x the reference's peak): within it, or under
    the mutation check beyond it; recorded where the run records. Returns max |Δ|."""
    atol = min(1e-4, 5e-5 * peak)
    if RECORD and not MUTATION:
        with open(RECORD, "a") as f:
            f.write(json.dumps({"check": what, "max_abs_diff": worst, "peak": peak, "atol": atol}) + "\n")
    if MUTATION:
        assert peak == 0 or worst > atol, (
            f"{what}: the mutation check (results x (1 + {MUTATION:g})) went unseen: max |Δ| {worst:.3g} <= {atol:.3g}")
    else:
        assert worst <= atol, f"{what}: max |Δ| {worst:.3g} > {atol:.3g} (peak {peak:.3g})"
    return worst


def outputs(out) -> dict:
    """The float tensors of an encode's or a decode's output, by name: a posterior's mode and logvar, `.sample`,
    `.latents` (AutoencoderTiny, SAME, LongCat), `.latent` (DC-AE, RAE), or the tensor itself."""
    if hasattr(out, "latent_dist"):
        dist = out.latent_dist
        return {"mode": dist.mode(), **({"logvar": dist.logvar} if hasattr(dist, "logvar") else {})}
    for name in ("sample", "latents", "latent"):
        if hasattr(out, name):
            return {name: getattr(out, name)}
    return {"output": out[0] if isinstance(out, tuple) else out}


def encoded(model, vae, x) -> dict:
    """`model.encode(x)`'s tensors; a class that samples in encode (LongCat) gets a generator of one seed."""
    kwargs = {"generator": torch.Generator().manual_seed(3)} if "generator" in inspect.signature(vae.encode).parameters else {}
    return outputs(model.encode(x, **kwargs))


def decoded(model, vae, z, name: str) -> dict:
    """The row's decoding call on `z`, with what its pipelines pass besides (LTX's timestep, Stable Video
    Diffusion's frame count, the consistency decoder's generator: fresh for each side), torch's global generator
    seeded alike (LTX's injected noise)."""
    torch.manual_seed(0)
    return outputs(getattr(model, CASES[name].call)(z, *decode_args(vae, z.shape[0])))


def encode_input(name: str, ours) -> torch.Tensor:
    shape = list(CASES[name].encode_input)
    shape[1] = ours.video_channels
    return randn(*shape)


def latents(name: str) -> torch.Tensor:
    """What the row decodes: PyTorch's latents of its encode input, or its decoder's own input."""
    vae, ours = pair(name)
    if CASES[name].encode_input is None:
        return randn(*CASES[name].decode_input)
    with torch.no_grad():
        return next(iter(encoded(vae, vae, encode_input(name, ours)).values()))


# ----- the checks -----


def check_encode(name: str):
    vae, ours = pair(name)
    x = encode_input(name, ours)
    with torch.no_grad():
        expected, actual = encoded(vae, vae, x), encoded(ours, vae, x)
    assert actual.keys() == expected.keys()
    for key in expected:
        close(actual[key], expected[key], f"{name} encode {key}")


def check_decode(name: str):
    vae, ours = pair(name)
    z = latents(name)
    with torch.no_grad():
        expected, actual = decoded(vae, vae, z, name), decoded(ours, vae, z, name)
    for key in expected:
        close(actual[key], expected[key], f"{name} {CASES[name].call} {key}")


def stream_latents(name: str, ours) -> torch.Tensor:
    """The latents of the row's stream video (several chunks), or else its decode input."""
    if CASES[name].stream is None:
        return latents(name)
    frames, height, width = CASES[name].stream
    return randn(*ours.latent_shape((1, ours.video_channels, frames, height, width)), seed=2)


def check_stream(name: str):
    """A stream, joined, is diffusers' whole decode; of several chunks where the row gives a stream video."""
    vae, ours = pair(name)
    z = stream_latents(name, ours)
    with torch.no_grad():
        (expected,) = decoded(vae, vae, z, name).values()
        torch.manual_seed(0)
        chunks = list(ours.decode_stream(z, *decode_args(vae, z.shape[0])))
    if CASES[name].stream is not None:
        assert len(chunks) >= 2, f"{name}: {len(chunks)} chunk(s) for latents {tuple(z.shape)}"
    axis = ours._family.frame_axis or 0
    close(torch.cat(chunks, dim=axis), expected, f"{name} stream of {len(chunks)} chunk(s)")


def check_session(name: str):
    """A session fed the stream's latents in the row's chunks is diffusers' whole decode."""
    vae, ours = pair(name)
    sizes = CASES[name].session
    assert sizes is not None, f"{name} carries state: its row needs session chunks"
    z = stream_latents(name, ours)
    assert sum(sizes) == z.shape[2], f"{name}: session chunks {sizes} for {z.shape[2]} latent frames"
    with torch.no_grad():
        (expected,) = decoded(vae, vae, z, name).values()
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        with ours.decode_session() as session:
            frames = [session.decode(z[:, :, start:start + size]) for start, size in zip(starts, sizes)]
            frames.append(session.finish())
    close(torch.cat(frames, dim=2), expected, f"{name} session of chunks {list(sizes)}")


def session_chunks(z: torch.Tensor, sizes) -> list:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [z[:, :, start:start + size] for start, size in zip(starts, sizes)]


def sessions_batched(ours, videos: dict, sizes, occupancy: list | None = None) -> dict:
    """Sessions stepped together (`decode_sessions`), joining and leaving: videos {name: (latents, first step)}, each
    fed the row's chunks from its first step on; {name: its frames joined, finish() included}."""
    chunks = {name: session_chunks(z, sizes) for name, (z, _) in videos.items()}
    sessions, frames = {}, {name: [] for name in videos}
    steps = max(start + len(sizes) for _, start in videos.values())
    for step in range(steps):
        live = {name: chunks[name][step - start] for name, (_, start) in videos.items() if start <= step < start + len(sizes)}
        for name in live:
            sessions.setdefault(name, ours.decode_session())
        got = ours.decode_sessions({sessions[name]: chunk for name, chunk in live.items()}, occupancy=occupancy)
        for name in live:
            frames[name].append(got[sessions[name]])
            if step - videos[name][1] == len(sizes) - 1:  # its last chunk: it leaves
                frames[name].append(sessions[name].finish())
    return {name: torch.cat(parts, dim=2) for name, parts in frames.items()}


def check_sessions_batched(name: str):
    """Sessions of several streams stepped together, joining and leaving at any chunk: each stream's frames are
    diffusers' whole decode of its latents, and each one-row stream's session alone within 1e-6 x max(1, peak), or
    PyTorch's own rounding of another batch size where that is more (diffusers' decode of a batch of two against each
    alone: 2.7e-6 on the tiny CogVideoX); the streams that agree run as one program call, and a second round with the
    same comings and goings compiles nothing."""
    vae, ours = pair(name)
    sizes = CASES[name].session
    z = stream_latents(name, ours)
    videos = {"a": (z, 0), "b": (randn(*z.shape, seed=5), 0), "pair": (randn(2, *z.shape[1:], seed=6), 0),
              "late": (randn(*z.shape, seed=7), 1)}
    with torch.no_grad():
        occupancy = []
        together = sessions_batched(ours, videos, sizes, occupancy)
        compiled = len(ours.compile_stats())
        again = sessions_batched(ours, videos, sizes)  # the same programs: the same frames, bit for bit
        assert all(torch.equal(again[key], together[key]) for key in videos), f"{name}: a second round differs"
        assert len(ours.compile_stats()) == compiled, f"{name}: a second round of the same sessions compiled " \
                                                        f"{len(ours.compile_stats()) - compiled} programs"
        # the rounding of another batch size, as PyTorch's own: diffusers' decode of a batch of two against each alone
        (both,) = decoded(vae, vae, torch.cat([videos["a"][0], videos["b"][0]]), name).values()
        rounding = max((both[k:k + 1] - next(iter(decoded(vae, vae, videos[key][0], name).values()))).abs().max().item()
                       for k, key in enumerate(("a", "b")))
        for key, (latents_, _) in videos.items():
            if key != "pair":  # (alone, the two-row stream would compile batch-two programs for this comparison only)
                with ours.decode_session() as session:
                    alone = torch.cat([session.decode(chunk) for chunk in session_chunks(latents_, sizes)]
                                      + [session.finish()], dim=2)
                worst = (together[key] - alone).abs().max().item()
                bound = max(1e-6 * max(1.0, alone.abs().max().item()), rounding)
                assert worst <= bound, (f"{name} session {key} batched vs alone: max |Δ| {worst:.3g} > {bound:.3g} "
                                        f"(PyTorch's batch of two against each alone: {rounding:.3g})")
            (expected,) = decoded(vae, vae, latents_, name).values()
            close(together[key], expected, f"{name} sessions batched: {key}")
    assert occupancy[0] == 3, f"{name}: the first step's three agreeing sessions ran in calls of {occupancy}"


@functools.cache
def service(kind: str) -> str:
    """The base URL of one service (torchax_vae.serve, on a local port) serving this process's TorchaxVAEs of the
    kind's rows that the service serves alone: its programs are the in-process checks' (one compile per shape).
    It runs until the process ends."""
    import contextlib

    from serving import serving
    from torchax_vae.serve import create_app

    models = {row.diffusers_class: pair(row.diffusers_class)[1] for row in registry.ROWS
              if row.kind == kind and isinstance(CASES[row.diffusers_class].served, dict)
              and not requires(CASES[row.diffusers_class].model)}
    stack = contextlib.ExitStack()
    _SERVICES.append(stack)  # (held: a collected stack would stop its server)
    return stack.enter_context(serving(create_app(models)))


_SERVICES: list = []


def check_served(name: str):
    """The service's answer (a POST of the row's latents, the raw float output) is diffusers' decode in PyTorch,
    called as the row's pipelines call it."""
    import requests

    vae, ours = pair(name)
    kind = next(row.kind for row in registry.ROWS if row.diffusers_class == name)
    z = latents(name)
    sent = z.transpose(1, 2).contiguous() if CASES[name].served_channels_last else z
    shape = "audio_shape" if z.dim() == 3 else "shape"  # (a sound VAE's latents: [B, C, L])
    params = {shape: ",".join(map(str, sent.shape)), "dtype": "float32", "output_type": "pt", **CASES[name].served}
    answer = requests.post(f"{service(kind)}/decode/{name}", params=params, data=sent.numpy().tobytes(), timeout=600)
    assert answer.status_code == 200, f"{name}: {answer.status_code} {answer.text[:500]}"
    got = torch.frombuffer(bytearray(answer.content), dtype=torch.float32).view(*json.loads(answer.headers["shape"]))
    with torch.no_grad():
        torch.manual_seed(0)
        call = getattr(vae, CASES[name].call)
        (expected,) = outputs(call(z, *decode_args(vae, z.shape[0]), **CASES[name].served_call)).values()
    if expected.dim() == 4 and got.dim() == 5:  # Stable Video Diffusion's frames as the batch: one video
        expected = expected.permute(1, 0, 2, 3)[None]
    elif expected.dim() == 5 and got.shape != expected.shape:  # [B, F, C, H, W] (Allegro) as the service's
        expected = expected.transpose(1, 2)
    close(got, expected, f"{name} served")


def check_mesh(name: str):
    """The row on 8 virtual devices (tests/contract/mesh.py, a process of its own): a batch's encode and decode
    against diffusers' model in PyTorch."""
    import subprocess
    import sys

    from helpers import xla_flags

    tests = pathlib.Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "contract.mesh", name], cwd=tests, capture_output=True, text=True,
                          env=dict(os.environ, XLA_FLAGS=xla_flags(8)), timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout[-2000:]
    for line in lines:
        judge(line["max_abs_diff"], line["peak"], f"{name} {line['what']}")


def contract_tests(kind: str) -> dict:
    """The contract's tests for the rows of one kind, by name, as a test file binds them (test_video.py, ...): each
    check parametrized by the rows it applies to, and a check that applies to none of the kind's rows left out (no
    test that can only skip)."""
    names = pytest.mark.parametrize("name", rows(kind))
    empty = []

    def only(applies):  # the rows a check applies to (tests/contract/test_table.py holds the rows to their classes)
        params = rows(kind, lambda row: applies(CASES[row.diffusers_class], row))

        def mark(test):
            if not params:
                empty.append(test.__name__)
            return pytest.mark.parametrize("name", params)(test)

        return mark

    @only(lambda case, row: case.encode_input is not None)  # (decoders alone and vocoders have no encode)
    def test_encode(name):
        check_encode(name)

    @names
    def test_decode(name):
        check_decode(name)

    @only(lambda case, row: case.call == "decode")  # (a vocoder is called, not decoded: no stream)
    def test_stream(name):
        check_stream(name)

    @only(lambda case, row: registry.facade(row).family.carries_state)  # (sessions: the families with state)
    def test_session(name):
        check_session(name)

    @only(lambda case, row: registry.facade(row).family.carries_state and case.stream is not None)
    def test_sessions_batched(name):
        check_sessions_batched(name)

    @only(lambda case, row: isinstance(case.served, dict))  # (the others: served in a pipeline's folder)
    def test_served(name):
        check_served(name)

    # a process of 8 virtual devices per row (20-60 s each on 2 cores): in the slow set, a sixth of the rows in each
    # CI run (`rotate`: conftest.py picks them from the commit), each row about one run in six
    @pytest.mark.slow
    @pytest.mark.rotate
    @names
    def test_mesh(name):
        check_mesh(name)

    tests = (test_encode, test_decode, test_stream, test_session, test_sessions_batched, test_served, test_mesh)
    return {test.__name__: test for test in tests if test.__name__ not in empty}

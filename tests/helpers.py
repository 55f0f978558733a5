"""Shared test tolerances, assert_close, the parity checks, and the seeded models of named configs.

The model factories live in scripts/vaes.py (the scripts use the same ones);
this puts that folder on sys.path and re-exports them.
"""

import contextlib
import copy
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from vaes import CONFIGS, MODELS, WAN_CONFIGS, random_vae, requires  # noqa: E402

__all__ = [
    "CONFIGS", "MODELS", "WAN_CONFIGS", "TOLERANCE", "assert_close", "bf16_check", "check_encode_decode", "random_vae",
    "randn", "seeded", "with_noise", "Bf16ConvsWithFp32Sums", "bf16_errors", "fp32_reference", "fp32_tolerance",
    "assert_parity", "needs", "pair_fixture", "check_tiled",
]



def needs(*configs: str):
    """The mark that skips a test module whose tiny configs the installed diffusers cannot build (vaes.requires)."""
    import pytest

    why = requires(*configs)
    return pytest.mark.skipif(why is not None, reason=str(why))


def pair_fixture(config: str):
    """A module fixture, `pair`: diffusers' model of this config (seeded random weights) and its TorchaxVAE."""
    import pytest

    @pytest.fixture(scope="module")
    def pair():
        from torchax_vae import TorchaxVAE

        vae = random_vae(config)
        return vae, TorchaxVAE(vae)

    return pair


# Max |Δ| allowed against the same model in plain PyTorch fp32.
TOLERANCE = {torch.float32: 1e-4}
# bf16: our error against the fp32 reference may be this many times PyTorch bf16's.
BF16_ERROR_RATIO = 2.0


def randn(*shape, seed=0) -> torch.Tensor:
    """A seeded standard normal tensor (its own generator: torch's global one is left alone)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def seeded(fn, seed=5):
    """fn() after torch.manual_seed(seed): LTX decoders draw their injected noise from torch's global generator."""
    torch.manual_seed(seed)
    return fn()


def with_noise(vae, value: float | None = None, seed: int = 1):
    """`vae` with its LTX noise scales (`per_channel_scale*`, zero in fresh weights) set to `value`, or uniform
    in [0, 1) from `seed`, so that the injected noise shows; returns it."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if "per_channel_scale" in name:
                p.copy_(torch.rand(p.shape, generator=generator) if value is None else torch.full_like(p, value))
    return vae


def max_abs_diff(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return (actual.detach().float().cpu() - expected.detach().float().cpu()).abs().max().item()


def assert_close(actual: torch.Tensor, expected: torch.Tensor, atol: float, what: str = "") -> float:
    """Asserts max |actual - expected| <= atol; the failure says how much and where. Returns max |Δ|."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual.detach().float().cpu() - expected.detach().float().cpu()).abs()
    worst = diff.max().item()
    if not worst <= atol:  # also catches NaN
        where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
        raise AssertionError(f"{what}: max |Δ| = {worst:.3g} > {atol:g} at index {where} (shape {tuple(diff.shape)})")
    return worst


def fp32_tolerance(reference: torch.Tensor, rel: float = 5e-5) -> float:
    """The fp32 tolerance of a comparison with PyTorch, sized to the output: min(1e-4, 5e-5 x the reference's peak),
    so that a result 0.02 % off fails at any scale (tests/contract/checks.py). `rel` up to 1e-4 (half of 0.02 %)
    where a measured error needs it; its caller says which."""
    assert rel <= 1e-4, f"rel {rel} would let a result 0.02 % off pass"
    return min(TOLERANCE[torch.float32], rel * reference.detach().float().abs().max().item())


def assert_parity(actual: torch.Tensor, expected: torch.Tensor, what: str = "", rel: float = 5e-5) -> float:
    """assert_close at fp32_tolerance(expected, rel): TorchaxVAE's result against diffusers' in PyTorch."""
    return assert_close(actual, expected, fp32_tolerance(expected, rel), what)


def check_tiled(vae, ours, x, tiles: dict, slicing: bool = False, what: str = "", rel: float = 5e-5) -> list[str]:
    """diffusers' tiling (its own `enable_tiling` arguments) and, with `slicing`, its slicing, switched on both
    sides: the encode's mean and the decode of diffusers' latents equal diffusers' in PyTorch within
    `fp32_tolerance` (`rel`); both switched off after. Returns the names of the programs `ours` compiled."""
    what = f"{what or type(vae).__name__}: {'sliced, ' if slicing else ''}tiled {tiles}"
    try:
        for model in (vae, ours):
            if slicing:
                model.enable_slicing()
            model.enable_tiling(**tiles)
        with torch.no_grad():
            expected = vae.encode(x).latent_dist.mean
            assert_parity(ours.encode(x).latent_dist.mean, expected, f"{what}, encode", rel)
            assert_parity(ours.decode(expected).sample, vae.decode(expected).sample, f"{what}, decode", rel)
    finally:
        for model in (vae, ours):
            model.disable_slicing()
            model.disable_tiling()
    return [s["name"] for s in ours.compile_stats()]


def batch_program(name: str) -> str:
    """The frame-batch program a compiled program belongs to: "decoder/tile/stage03.1+conv_cache" -> "decoder/tile+conv_cache".

    With program_split "layer" (the default on CPU) a frame batch is one program per layer
    (torchax_vae.engine.staging), named after its batch program plus "/stageNN[.sub]".
    """
    return re.sub(r"/stage[0-9.]+", "", name)


def check_encode_decode(vae, ours, x, what):
    """Posterior mean, logvar, sample(generator), mode, and decode of the mean, all within fp32 tolerance."""
    expected = vae.encode(x).latent_dist
    actual = ours.encode(x).latent_dist
    assert actual.mean.dtype == x.dtype and actual.mean.device == x.device
    assert_close(actual.mean, expected.mean, TOLERANCE[torch.float32], f"{what} posterior mean")
    assert_close(actual.logvar, expected.logvar, TOLERANCE[torch.float32], f"{what} posterior logvar")
    assert_close(actual.mode(), expected.mode(), TOLERANCE[torch.float32], f"{what} posterior mode")
    sample_expected = expected.sample(generator=torch.Generator().manual_seed(7))
    sample_actual = actual.sample(generator=torch.Generator().manual_seed(7))
    assert_close(sample_actual, sample_expected, TOLERANCE[torch.float32], f"{what} posterior sample(generator)")
    decoded = ours.decode(expected.mean).sample
    assert_close(decoded, vae.decode(expected.mean).sample, TOLERANCE[torch.float32], f"{what} decode")


class Bf16ConvsWithFp32Sums(TorchFunctionMode):
    """PyTorch's bf16 convolutions computed as cuDNN and oneDNN compute them: bf16 operands, fp32 sums, bf16 out.

    This CPU build of torch runs bf16 convolutions on its reference kernels (`slow_conv3d_forward`): a Wan 2.2
    decode of 5x48x80 took 478 s in bf16 against 4.2 s in fp32, most of CI's slow set. The product of two bf16
    numbers is exact in fp32, so computing the convolution in fp32 from the bf16 operands and rounding its output
    to bf16 differs from those kernels only in the order of the fp32 sums (tests/test_parity.py checks the
    resulting error against theirs). Everything else (norms, activations, attention) stays in torch's bf16.
    """

    CONVS = frozenset({F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.CONVS and args[0].dtype == torch.bfloat16:
            def fp32(a):
                return a.float() if isinstance(a, torch.Tensor) else a
            return func(*map(fp32, args), **{k: fp32(v) for k, v in kwargs.items()}).bfloat16()
        return func(*args, **kwargs)


def posterior_mode(model, x):
    return model.encode(x).latent_dist.mode()


def decoded_sample(model, z, *decode_args):
    return model.decode(z, *decode_args).sample


def fp32_reference(vae, x, decode_args=(), latents=posterior_mode, decoded=decoded_sample) -> dict:
    """PyTorch fp32's latents (`latents(vae, x)`: the posterior mean) of `x` and its decode of them
    (`decoded(vae, z, *decode_args)`): {"encode": ..., "decode": ...}."""
    latents = latents(vae, x)
    return {"encode": latents, "decode": decoded(vae, latents, *decode_args)}


def bf16_errors(vae, x, reference: dict, decode_args=(), fp32_sums: bool = True, latents=posterior_mode,
                decoded=decoded_sample) -> dict:
    """PyTorch bf16's own max |Δ| against `reference` (fp32_reference): {"encode": ..., "decode": ...}.

    fp32_sums: the bf16 copy's convolutions run under Bf16ConvsWithFp32Sums (torch's bf16 CPU kernels are too
    slow for the released architectures); False: on torch's own bf16 kernels.
    """
    torch_bf16 = copy.deepcopy(vae).to(torch.bfloat16)
    with Bf16ConvsWithFp32Sums() if fp32_sums else contextlib.nullcontext():
        encoded = latents(torch_bf16, x.bfloat16())
        frames = decoded(torch_bf16, reference["encode"].bfloat16(), *decode_args)
    return {"encode": max_abs_diff(encoded, reference["encode"]), "decode": max_abs_diff(frames, reference["decode"])}


def bf16_check(vae, ours_bf16, x, what, decode_args=(), latents=posterior_mode, decoded=decoded_sample,
               own_kernels: bool = False):
    """Our bf16 error against fp32 PyTorch is at most BF16_ERROR_RATIO x PyTorch bf16's own (bf16_errors).

    own_kernels: PyTorch bf16's error is the larger of its fp32-sums run and its own bf16 kernels' (tiny configs
    only: those kernels are slow); for a class where the fp32-sums yardstick is the stricter by more than the
    ratio's margin (its caller gives the numbers).

    decode_args: the decoder's further arguments (LTX's timestep); latents: what the class's `encode` gives as
    latents (AutoencoderDC: `.latent`, no posterior); decoded: what its `decode` gives as frames (AutoencoderVidTok:
    the tensor itself).
    """
    reference = fp32_reference(vae, x, decode_args, latents, decoded)
    theirs = bf16_errors(vae, x, reference, decode_args, latents=latents, decoded=decoded)
    if own_kernels:
        kernels = bf16_errors(vae, x, reference, decode_args, False, latents=latents, decoded=decoded)
        theirs = {stage: max(theirs[stage], kernels[stage]) for stage in theirs}
    # inputs in bf16, as PyTorch bf16's (and as diffusers' pipelines cast them to vae.dtype)
    ours = {"encode": max_abs_diff(latents(ours_bf16, x.bfloat16()), reference["encode"]),
            "decode": max_abs_diff(decoded(ours_bf16, reference["encode"].bfloat16(), *decode_args),
                                   reference["decode"])}
    for stage in ("encode", "decode"):
        assert ours[stage] <= BF16_ERROR_RATIO * theirs[stage], (
            f"{what} bf16 {stage}: max |Δ| vs fp32 = {ours[stage]:.3g}, PyTorch bf16's = {theirs[stage]:.3g}"
        )


def settings(config) -> dict:
    """A model config without diffusers' bookkeeping keys (_class_name, _name_or_path, ...), tuples as JSON lists."""
    def listed(value):  # nested too (AutoencoderDC's qkv_multiscales: ((), (5,)))
        return [listed(v) for v in value] if isinstance(value, (tuple, list)) else value

    return {k: listed(v) for k, v in dict(config).items() if not k.startswith("_")}


def xla_flags(devices: int) -> str:
    """XLA_FLAGS for a subprocess on `devices` virtual CPU devices, with the suite's own (tests/conftest.py)."""
    import os

    suite = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in flag]
    return " ".join([*suite, f"--xla_force_host_platform_device_count={devices}"])


def deltas_on_8_devices(script: str, atol: float) -> dict:
    """Runs `script` (Python printing a JSON line {"devices": n, what: max |Δ|, ...} last) in a new process on 8
    virtual CPU devices, from this folder; asserts it ran on 8 and every max |Δ| is within `atol`. Returns the rows."""
    import json
    import os
    import subprocess

    env = dict(os.environ, XLA_FLAGS=xla_flags(8))
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parent, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rows.pop("devices") == 8
    for what, worst in rows.items():
        assert worst <= atol, f"{what} on 8 devices: max |Δ| = {worst:.3g} > {atol:g}"
    return rows


def by_hand(test):
    """slow, heavy and by_hand (pyproject's markers): a test never in CI, run with `pytest -m by_hand`; its reason
    beside it and in docs/results/parity.md's "By hand only"."""
    return pytest.mark.slow(pytest.mark.heavy(pytest.mark.by_hand(test)))

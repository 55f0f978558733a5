"""Shared test tolerances and assert_close. Seeded models: torchax_vae.parity.random_vae."""

import re

import torch

# Max |Δ| allowed against the same model in plain PyTorch fp32.
TOLERANCE = {torch.float32: 1e-4}
# bf16: our error against the fp32 reference may be this many times PyTorch bf16's.
BF16_ERROR_RATIO = 2.0


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


def batch_program(name: str) -> str:
    """The frame-batch program a compiled program belongs to: "decoder/tile/stage03.1+conv_cache" -> "decoder/tile+conv_cache".

    With program_split "layer" (the default on CPU) a frame batch is one program per layer
    (torchax_vae.staging), named after its batch program plus "/stageNN[.sub]".
    """
    return re.sub(r"/stage[0-9.]+", "", name)

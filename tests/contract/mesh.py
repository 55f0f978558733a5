"""The contract on 8 devices: run by tests/contract/checks.py's mesh check in a process of its own, with 8 virtual
CPU devices, for the rows named; prints a JSON line per comparison.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python -m contract.mesh AutoencoderKLWan ...   (from tests/)

Each row's TorchaxVAE runs on `make_mesh()` (one 'dp' row of 8 'tp' devices: heights and widths split, a sound's
batch over 'dp'), a batch of two videos or images (eight clips of sound), and for the families with sessions,
sessions stepped together (joining and leaving), against diffusers' model in PyTorch.
"""

import json
import sys

import torch

from contract import checks
from contract.cases import CASES
from torchax_vae import TorchaxVAE, make_mesh, registry
from parity import SLICED_REFERENCE


def batched(shape: tuple, batch: int) -> tuple:
    return (batch, *shape[1:])


@torch.no_grad()
def run(names: list[str]) -> None:
    for name in names:
        case = CASES[name]
        kind = registry.by_class(name).kind
        vae, _ = checks.pair(name)
        if name in SLICED_REFERENCE:  # diffusers' class decodes a batch only sliced (scripts/parity.py)
            vae.enable_slicing()
        ours = TorchaxVAE(vae, mesh=make_mesh())
        batch = 8 if kind == "sound" else 2
        if case.encode_input is not None:
            shape = list(batched(case.encode_input, batch))
            shape[1] = ours.video_channels
            x = checks.randn(*shape, seed=4)
            expected, actual = checks.encoded(vae, vae, x), checks.encoded(ours, vae, x)
            for key in expected:
                emit(name, f"encode {key} on 8 devices", actual[key], expected[key])
            z = next(iter(expected.values()))
        else:
            z = checks.randn(*batched(case.decode_input, batch), seed=4)
        expected, actual = checks.decoded(vae, vae, z, name), checks.decoded(ours, vae, z, name)
        for key in expected:
            emit(name, f"{case.call} {key} on 8 devices", actual[key], expected[key])
        if ours._family.carries_state and case.stream is not None:  # sessions stepped together on the mesh
            z = checks.stream_latents(name, ours)
            videos = {"a": (z, 0), "b": (checks.randn(*z.shape, seed=5), 0), "late": (checks.randn(*z.shape, seed=7), 1)}
            together = checks.sessions_batched(ours, videos, case.session)
            for key, (latents, _) in videos.items():
                (expected,) = checks.decoded(vae, vae, latents, name).values()
                emit(name, f"sessions batched on 8 devices: {key}", together[key], expected)
        assert ours.mesh.devices.size == 8


def emit(name, what, actual, expected) -> None:
    print(json.dumps({"name": name, "what": what, "max_abs_diff": (actual.float() - expected.float()).abs().max().item(),
                      "peak": expected.abs().max().item(), "shape": list(expected.shape)}), flush=True)


if __name__ == "__main__":
    run(sys.argv[1:])

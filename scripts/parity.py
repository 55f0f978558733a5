"""Print max |Δ| of TorchaxVAE against diffusers' PyTorch VAE (fp32) for a grid of cases.

    python scripts/parity.py                       # tiny and official configs, the table in docs/results/parity.md
    python scripts/parity.py --config tiny --frames 9 17
    python scripts/parity.py --config wan2.1 wan2.2 --frames 1 5 9 17   # Wan's released architectures
"""

import argparse
import copy
import dataclasses
import sys

import torch

from torchax_vae import TorchaxVAE
from vaes import MODELS, decode_args, random_vae


@dataclasses.dataclass
class Row:
    config: str
    dtype: str
    frames: int
    batch: int
    slicing: bool
    size: int
    mean: float  # max |Δ| against PyTorch fp32
    logvar: float  # nan where the posterior has none (Cosmos: identity)
    sample: float
    decode: float
    torch_bf16_decode: float | None = None  # PyTorch bf16's own max |Δ| against fp32, for scale


# diffusers classes that fail on a batch of two or more unless slicing is on (AutoencoderKLHunyuanVideo15: its attention
# mask broadcasts over the batch as heads; torchax_vae/patches/causal_mask.py): their reference is always the sliced result.
SLICED_REFERENCE = {"AutoencoderKLHunyuanVideo15", "AutoencoderKLAllegro"}
# diffusers classes whose sliced decode is wrong for a batch (AutoencoderKLMagvit: `_decode` leaves its modules' cache
# to the next video, which then continues the first one's frames): their reference is always the unsliced result,
# which decodes each video on its own, as slicing should.
UNSLICED_REFERENCE = {"AutoencoderKLMagvit"}
# diffusers classes that encode and decode only tiled (AutoencoderKLAllegro raises NotImplementedError otherwise)
TILED_ONLY = {"AutoencoderKLAllegro"}


def _diff(a, b) -> float:
    return (a.float() - b.float()).abs().max().item()


@torch.no_grad()
def compare(vae, ours: TorchaxVAE, config: str, frames: int, batch: int, slicing: bool, size: int) -> Row:
    """One row: encode and decode a seeded random video both ways; max |Δ| of each result."""
    x = torch.randn(batch, ours.video_channels, frames, size, size, generator=torch.Generator().manual_seed(frames))
    for model in (vae, ours):
        (model.enable_slicing if slicing else model.disable_slicing)()
    if type(vae).__name__ in SLICED_REFERENCE:
        vae.enable_slicing()
    if type(vae).__name__ in UNSLICED_REFERENCE:
        vae.disable_slicing()
    # the wrapper takes its own dtype (bf16: inputs cast, as pipelines cast to vae.dtype)
    expected, actual = vae.encode(x).latent_dist, ours.encode(x.to(ours.dtype)).latent_dist
    expected_sample = expected.sample(generator=torch.Generator().manual_seed(0))
    actual_sample = actual.sample(generator=torch.Generator().manual_seed(0))
    args = decode_args(vae, batch, torch.float32)  # LTX 0.9.1's timestep (its injected noise: seeded alike)
    if args:  # diffusers' LTX decode fails with slicing and a timestep: its reference is the whole batch
        vae.disable_slicing()  # (the same here: the noise scales of random weights start at zero)
    torch.manual_seed(0)
    latents = expected.mode()  # the mean of a Gaussian posterior; Cosmos's identity posterior: its latents
    reference = vae.decode(latents, *args).sample
    torch.manual_seed(0)
    decoded = ours.decode(latents.to(ours.dtype), *args).sample
    row = Row(
        config=config,
        dtype=str(ours.dtype).removeprefix("torch."),
        frames=frames,
        batch=batch,
        slicing=slicing,
        size=size,
        mean=_diff(actual.mode(), latents),
        logvar=_diff(actual.logvar, expected.logvar) if hasattr(expected, "logvar") else float("nan"),
        sample=_diff(actual_sample, expected_sample),
        decode=_diff(decoded, reference),
    )
    if ours.dtype == torch.bfloat16:
        torch_bf16 = copy.deepcopy(vae).to(torch.bfloat16)
        torch.manual_seed(0)
        row.torch_bf16_decode = _diff(torch_bf16.decode(latents.bfloat16(), *args).sample, reference)
    return row


def table(rows: list[Row]) -> str:
    """A markdown table of the rows."""
    head = "| config | dtype | frames | batch | slicing | HxW | mean | logvar | sample | decode | PyTorch bf16 decode |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        bf16 = "" if r.torch_bf16_decode is None else f"{r.torch_bf16_decode:.2e}"
        lines.append(
            f"| {r.config} | {r.dtype} | {r.frames} | {r.batch} | {'on' if r.slicing else 'off'} | {r.size}x{r.size} "
            f"| {r.mean:.2e} | {'n/a' if r.logvar != r.logvar else f'{r.logvar:.2e}'} | {r.sample:.2e} | "
            f"{r.decode:.2e} | {bf16} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(MODELS), nargs="+", default=["tiny", "official"])
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 5, 9, 13, 17, 33])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--size", type=int, default=32, help="height = width of the test videos")
    parser.add_argument("--no-bf16", action="store_true", help="skip the bf16 rows")
    args = parser.parse_args(argv)

    rows = []
    bf16_frames = {9, 17} & set(args.frames) or {max(args.frames)}  # (images: the one frame)
    for config in args.config:
        vae = random_vae(config)
        if type(vae).__name__ in TILED_ONLY:
            vae.enable_tiling()
        ours = {torch.float32: TorchaxVAE(vae)}
        if not args.no_bf16:
            ours[torch.bfloat16] = TorchaxVAE(vae, dtype=torch.bfloat16)
        for dtype, model in ours.items():
            for frames in args.frames:
                for batch in args.batch:
                    for slicing in [False, True] if batch > 1 else [False]:
                        if dtype == torch.bfloat16 and (batch > 1 or frames not in bf16_frames):
                            continue  # bf16: a couple of rows for scale
                        rows.append(compare(vae, model, config, frames, batch, slicing, args.size))
                        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))
    def largest(r):  # (logvar: nan where the posterior has none)
        return max(v for v in (r.mean, r.logvar, r.sample, r.decode) if v == v)

    worst = max((r for r in rows if r.dtype == "float32"), key=largest, default=None)
    if worst is not None:
        print(f"\nfp32 worst max |Δ|: {largest(worst):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Print max |Δ| of TorchaxVAE against diffusers' PyTorch VAE (fp32) for a grid of cases.

    python scripts/parity.py                       # tiny and official configs, the README's table
    python scripts/parity.py --config tiny --frames 9 17
"""

import argparse
import sys

import torch

from torchax_vae import TorchaxVAE
from torchax_vae.parity import CONFIGS, compare, random_vae, table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), nargs="+", default=["tiny", "official"])
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 5, 9, 13, 17, 33])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--size", type=int, default=32, help="height = width of the test videos")
    parser.add_argument("--no-bf16", action="store_true", help="skip the bf16 rows")
    args = parser.parse_args(argv)

    rows = []
    for config in args.config:
        vae = random_vae(config)
        ours = {torch.float32: TorchaxVAE(vae)}
        if not args.no_bf16:
            ours[torch.bfloat16] = TorchaxVAE(vae, dtype=torch.bfloat16)
        for dtype, model in ours.items():
            for frames in args.frames:
                for batch in args.batch:
                    for slicing in [False, True] if batch > 1 else [False]:
                        if dtype == torch.bfloat16 and (batch > 1 or frames not in (9, 17)):
                            continue  # bf16: a couple of rows for scale
                        rows.append(compare(vae, model, config, frames, batch, slicing, args.size))
                        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))
    worst = max((r for r in rows if r.dtype == "float32"), key=lambda r: max(r.mean, r.logvar, r.sample, r.decode), default=None)
    if worst is not None:
        print(f"\nfp32 worst max |Δ|: {max(worst.mean, worst.logvar, worst.sample, worst.decode):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

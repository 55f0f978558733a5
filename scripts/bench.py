"""Compile-only benchmark of tiling: programs, compile seconds, XLA temp memory (see torchax_vae/bench.py).

    python scripts/bench.py                      # official config, 49x480x720, both XLA:CPU schedulers
    python scripts/bench.py --config tiny --frames 9 --size 64x96 --tile 32x48
"""

import sys

from torchax_vae.bench import main

if __name__ == "__main__":
    sys.exit(main())

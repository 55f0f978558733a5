"""`python -m torchax_vae ...` is the `torchax-vae` command."""

import sys

from torchax_vae.cli import main

sys.exit(main())

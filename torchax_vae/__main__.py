"""`python -m torchax_vae ...` is the `torchax-vae` command."""

import sys

from .cli import main

sys.exit(main())

"""`torchax-vae serve`: a VAE service that diffusers' `remote_decode` and `remote_encode` talk to unchanged.

`create_app(models, ...)` returns the ASGI app (Starlette), for uvicorn, Ray Serve or another server to run;
`torchax_vae.serve.server.run` is what the command runs. docs/serve.md has the protocol and the figures.
"""

from .app import Limits, create_app

__all__ = ["Limits", "create_app"]

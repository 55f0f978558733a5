"""`torchax-vae serve`: a VAE service that diffusers' `remote_decode` and `remote_encode` talk to unchanged.

`create_app(models, ...)` returns the ASGI app (Starlette), for uvicorn, Ray Serve or another server to run;
`torchax_vae.serve.server.run` is what the command runs. docs/guide/serve.md has the protocol and the figures.
"""

__all__ = ["Limits", "create_app"]


def __getattr__(name):
    # The app and its stack load when asked for: `torchax-vae --help` and argument errors stay stdlib-only.
    if name in __all__:
        from torchax_vae.serve import app  # (starlette and the engine: only when the app is asked for)

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

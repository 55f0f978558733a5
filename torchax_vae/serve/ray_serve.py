"""The service as a Ray Serve deployment, for users who outgrow one host: Ray runs the replicas, routes requests
and scales them; each replica is this app with its own device worker (docs/guide/serve.md, "Past one host").

    from ray import serve
    from torchax_vae.serve.ray_serve import deployment

    serve.run(deployment({"wan": "/models/wan"}).bind(), route_prefix="/")

Needs the `serve` extra (`pip install "torchax-vae[serve]"`, which brings `ray[serve]`).
"""


def deployment(models: dict, *, name: str = "torchax-vae", ray_actor_options: dict | None = None, **options):
    """A Ray Serve deployment whose replicas each serve `models` ({name: model folder or hub id}).

    `options` go to `create_app` (dtype, warmup, token, limits). Models are named by path, not passed as
    objects: each replica loads its own on its own devices (give it some with `ray_actor_options`, e.g.
    {"num_gpus": 1} or {"resources": {"TPU": 4}}).
    """
    from ray import serve

    from torchax_vae.serve.app import create_app  # (the engine: in the replica that builds the app)

    def build():
        return create_app(models, **options)

    return serve.deployment(serve.ingress(build)(), name=name, ray_actor_options=ray_actor_options or {})

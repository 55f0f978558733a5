"""The service under Ray Serve (`torchax_vae.serve.ray_serve.deployment`): a replica built by Ray answers the
unchanged client as the plain server does."""

import pytest
import torch
import requests
from diffusers.utils.remote_utils import remote_decode

from helpers import assert_parity, randn, random_vae
from serving import free_port, wait_ready

# Ray warns of its own deprecations (pydantic, its APIs) as it imports and starts: not this package's.
# `ray.init` forks the test's process. Where an earlier test of the same process has started JAX's CPU backend (the
# every-family load test did, computing its references: why this test failed after it, 2026-11-25, found
# 2026-11-28), JAX's at-fork hook warns "os.fork() was called ... JAX is multithreaded", which the suite's warnings
# policy turns into a failure. The fork is Ray's, in this test's driver process; the replica that serves (and
# computes with JAX) is a process of its own, started fresh. torchax_vae.media.files.quiet_ffmpeg ignores the same warning
# around imageio-ffmpeg's fork + exec.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning:ray.*"),
              pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")]


def test_a_ray_serve_replica_answers_remote_decode(tmp_path):
    ray = pytest.importorskip("ray", reason="the serve extra (ray[serve]) is part of the test extra")
    from ray import serve

    from torchax_vae.serve.ray_serve import deployment

    model = random_vae("wan-tiny")
    model.save_pretrained(tmp_path)
    env = {"JAX_PLATFORMS": "cpu", "TORCHAX_VAE_CACHE_DIR": "off"}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(deployment({"wan": str(tmp_path)}).bind(), route_prefix="/")
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, 300)
        z = randn(1, 16, 2, 8, 8, seed=7)
        out = remote_decode(endpoint=f"{base}/decode/wan", tensor=z, output_type="pt", return_type="pt",
                            do_scaling=False)
        with torch.no_grad():
            assert_parity(out, model.decode(z).sample, "through Ray Serve, against diffusers' decode")
        missing = requests.get(f"{base}/decode/nope", timeout=30)
        assert missing.status_code == 405 and "error" in missing.json()
    finally:
        serve.shutdown()
        ray.shutdown()

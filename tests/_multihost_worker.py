"""One of the processes of tests/test_sharding.py::test_two_processes_decode_on_one_global_mesh.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 \
        python tests/_multihost_worker.py PROCESS_ID NUM_PROCESSES PORT OUT.npy

Joins the `jax.distributed` job on 127.0.0.1:PORT, builds one mesh over every
process's devices, decodes the same seeded latents as every other process, and
saves the (whole, gathered) video.
"""

import sys

import jax

process_id, num_processes, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{port}", num_processes=num_processes, process_id=process_id,
    initialization_timeout=120,
)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from torchax_vae import TorchaxVAE, make_mesh  # noqa: E402
from helpers import random_vae  # noqa: E402

mesh = make_mesh()
assert mesh.devices.size == len(jax.devices()) > len(jax.local_devices()), (jax.devices(), jax.local_devices())
z = torch.randn(1, 4, 5, 4, 8, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    video = TorchaxVAE(random_vae("tiny"), mesh=mesh).decode(z).sample
np.save(out, video.numpy())
jax.distributed.shutdown()

"""One GPU shared by torch CUDA and JAX (torchax_vae/engine/gpu_memory.py): the decision, and that TorchaxVAE
makes it before JAX starts its backends."""

import os
import subprocess
import sys

import pytest

from torchax_vae.engine import gpu_memory


@pytest.mark.parametrize(
    "environ, torch_cuda, jax_started, action",
    [
        ({}, True, False, "set"),
        ({}, True, True, "warn"),
        ({}, False, False, "none"),
        ({"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}, True, False, "user"),
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}, True, True, "user"),
    ],
)
def test_decision(environ, torch_cuda, jax_started, action):
    assert gpu_memory.decide(environ, torch_cuda, jax_started) == action


def test_setting_without_torch_cuda_changes_nothing():
    environ = {}
    assert gpu_memory.share_gpu_with_torch(environ) == "none"  # this machine's torch has no CUDA
    assert environ == {}


SCRIPT = """
import os, torch
torch.cuda.is_available = lambda: True  # as in a pipeline whose transformer runs on CUDA
from helpers import random_vae
from torchax_vae import TorchaxVAE
from torchax_vae.engine import gpu_memory
assert not gpu_memory._jax_started(), "importing torchax_vae started JAX's backends"
TorchaxVAE(random_vae("tiny"))
print(os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"), os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION"))
"""


@pytest.mark.slow  # 15 s: a process (CI: every sixth run)
def test_torchax_vae_turns_off_preallocation_before_jax_starts_when_torch_uses_cuda():
    env = {k: v for k, v in os.environ.items() if k not in gpu_memory.VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=os.path.dirname(__file__)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == f"false {gpu_memory.MEM_FRACTION}"

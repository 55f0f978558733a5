"""A good neighbour in the process (torchax_vae/engine/process.py): the user's own torch.compile keeps working beside a
TorchaxVAE, and a machine without an accelerator hears nothing from the accelerator plugins the extras install.

Each case runs in a new process without the suite's JAX_PLATFORMS=cpu (tests/conftest.py), as a user's would.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchax_vae.patches import import_torchax, torch_accelerator

HERE = Path(__file__).resolve().parent


def _user_env() -> dict:
    """The environment a user's process has: none of the suite's JAX settings."""
    return {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "XLA_FLAGS")}


def _python(code: str, cwd=HERE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_user_env(), cwd=cwd,
                          timeout=300)


# (CUDA comes first: torch's accelerator is never "jax" there, which torchax never claims; said, not passed)
@pytest.mark.slow  # 14 s: a process (CI: every sixth run)
@pytest.mark.skipif(torch.cuda.is_available(), reason="torch's accelerator here is CUDA, which torchax never claims")
def test_torchax_still_makes_jax_a_torch_accelerator():
    """The tripwire of torchax_vae/patches/torch_accelerator.py: torchax's device module still says "available"."""
    code = ("import torch\nfrom torchax_vae.patches import import_torchax, torch_accelerator\nimport_torchax()\n"
            "print(torch_accelerator.needed(), torch.accelerator.current_accelerator())")
    result = _python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    needed, accelerator = result.stdout.split()
    assert (needed, accelerator) == ("True", "jax"), "torchax no longer claims torch's accelerator: drop the patch"


COMPILE_BESIDE = """
import torch
from helpers import random_vae, assert_close
from torchax_vae import TorchaxVAE

vae = random_vae("tiny")
ours = TorchaxVAE(vae)  # torchax imported, "jax" registered as torch's PrivateUse1 backend
z = torch.randn(1, 4, 2, 4, 6, generator=torch.Generator().manual_seed(0))
compiled = torch.compile(lambda x: torch.cos(x) + 1)  # the user's own compile, after the wrapper exists
assert_close(compiled(torch.ones(2)), torch.cos(torch.ones(2)) + 1, 1e-6, "torch.compile beside a TorchaxVAE")
with torch.no_grad():
    worst = assert_close(ours.decode(z).sample, vae.decode(z).sample, 1e-4, "decode after torch.compile")
import jax
print("platform", jax.devices()[0].platform, "max_abs", worst)
"""


@pytest.mark.slow  # inductor compiles in a new process (20 s); the quiet run is also checked by the next test
def test_torch_compile_works_beside_a_torchax_vae_and_the_first_run_is_quiet():
    result = _python(COMPILE_BESIDE)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split()[:2] == ["platform", "cpu"], result.stdout
    # libtpu and JAX's CUDA plugin are installed (the test extra) and this machine has neither chip: not a word
    assert result.stderr == "", f"a user's first run printed:\n{result.stderr[-3000:]}"


def test_accelerator_patch_is_idempotent_and_keeps_torchax_working():
    import_torchax()
    torch_accelerator.patch()
    assert not torch_accelerator.patch()  # the second call changes nothing
    assert not torch_accelerator.needed()
    assert not torch.accelerator.is_available() or torch.cuda.is_available()


@pytest.mark.slow  # 31 s: a process with libtpu and JAX's CUDA plugin (CI: every sixth run)
def test_a_bad_input_decode_prints_one_line_with_the_accelerator_extras_installed(tmp_path):
    model = tmp_path / "vae"
    code = (f"from helpers import random_vae\nrandom_vae('tiny').save_pretrained({str(model)!r})\n"
            f"import torch\ntorch.save(torch.randn(1, 16, 2, 4, 6), {str(tmp_path / 'wan.pt')!r})")
    assert _python(code).returncode == 0
    result = subprocess.run(
        [sys.executable, "-m", "torchax_vae", "decode", str(tmp_path / "wan.pt"), "-o", str(tmp_path / "v.mp4"),
         "--model", str(model), "--layout", "BCFHW", "--no-progress"],
        capture_output=True, text=True, env=_user_env(), cwd=tmp_path, timeout=300,
    )
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1, f"exit {result.returncode}, stderr:\n{result.stderr[-3000:]}"
    assert "another VAE's latents" in lines[0]

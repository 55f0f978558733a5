"""The harness around diffusers' vendored tests cannot pass a wrong VAE: with every TorchaxVAE result x 1.001 (the
mutation switch, `TORCHAX_VAE_MUTATE`, in a pytest of its own), the expected failure of a value-slice test (listed,
or under diffusers' own xfail mark) no longer matches, and the test fails.

0.1 %, not the contract's 0.02 %: diffusers' value-slice tests compare at 1e-3 or wider, so a smaller error is below
what they can see, wrapped or not (Wan's and Stable Audio's still pass at 1e-3). What sees 0.02 % is the output
comparisons (tests/diffusers/test_pipeline_outputs.py and test_modular_outputs.py, every pipeline in CI, Wan's video
and Stable Audio's sound among them) and the family contract (tests/contract): CI runs them under
`TORCHAX_VAE_MUTATE=2e-4`, where each must see the error (.ci/run)."""

import os
import subprocess
import sys

import pytest

NODES = {  # node -> what its failure must say
    "tests/diffusers/tests/pipelines/stable_diffusion/test_stable_diffusion.py::TestStableDiffusionPipeline::"
    "test_stable_diffusion_ddim": "not the expected failure",
    # judged by the float64 referee (plain diffusers' float32 VAE is 0.013 off exact arithmetic on its masked image)
    "tests/diffusers/tests/pipelines/stable_diffusion/test_stable_diffusion_inpaint.py::"
    "TestStableDiffusionInpaintPipeline::test_stable_diffusion_inpaint": "against plain diffusers' with its VAE in float64",
    # under diffusers' own xfail mark ("Latest transformers changes the slices"), which pytest alone would accept
    "tests/diffusers/tests/pipelines/kandinsky/test_kandinsky.py::KandinskyPipelineFastTests::test_kandinsky":
        "not the expected failure",
    # failing in a mixin of test_pipelines_common.py at about 1.1e-4 both ways: its outputs are compared there, or,
    # where plain diffusers' failure is the one the float64 referee judges (1.03e-4 on an AMX Xeon, 2026-12-08),
    # the referee's verdict
    "tests/diffusers/tests/pipelines/kandinsky/test_kandinsky.py::KandinskyPipelineFastTests::"
    "test_inference_batch_single_identical": ("_test_inference_batch_single_identical: output.images: max |Δ|",
                                             "not the expected failure (a batch of two and single calls differ"),
}


@pytest.mark.slow  # about 40 s on 2 cores: four pipeline tests in a pytest of their own
def test_a_decode_off_by_a_thousandth_fails_the_harness():
    env = {**os.environ, "TORCHAX_VAE_MUTATE": "1e-3", "TORCHAX_VAE_ROTATION": ""}  # all four, whatever CI's slice
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rf", "--tb=line", *NODES], capture_output=True, text=True, cwd=root, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert f"{len(NODES)} failed" in out, out[-4000:]
    for node, says in NODES.items():
        says = (says,) if isinstance(says, str) else says
        assert f"FAILED {node}" in out and any(words in out for words in says), (node, says, out[-4000:])


def _failures():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent / "diffusers" / "failures.py"
    spec = importlib.util.spec_from_file_location("harness_failures", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_expected_failure_keeps_its_numbers():
    """Both runs fail with the same message but for its numbers: within a factor of two (or 1e-4) they are the same
    failure; a difference of another size is not, though the mask hides it (issue 74: the batch tests' 1.13e-4
    against 1.03e-4 passes, 3e-4 does not)."""
    failures = _failures()

    def failure(message):
        return failures.Failure("AssertionError", failures.masked(message), {}, failures.numbers_of(message))

    plain = failure("assert np.float32(0.000103) < 0.0001")
    assert failures.differences(plain, failure("assert np.float32(0.000113) < 0.0001")) == []
    far = failures.differences(plain, failure("assert np.float32(0.0003) < 0.0001"))
    assert len(far) == 1 and "0.0003 wrapped against 0.000103" in far[0], far
    count = failures.differences(failure("expected 3 frames, got 5"), failure("expected 3 frames, got 6"))
    assert count and "6 wrapped against 5" in count[0], count
    assert failures.numbers_of("at 0x7f3a in /tmp/pytest-1/x9.py: 2.5") == (2.5,)

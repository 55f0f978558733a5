"""Which of diffusers' modular pipeline tests (tests/modular_pipelines) run here, and how the others fail.

The tiny hub pipelines they load are out of reach; modular_standins.py builds stand-ins from diffusers' non-modular
pipeline tests of the same models. Where none can be built, the file (or class) is skipped with its reason
(`WITHOUT_STANDIN`, `SECOND_ENVIRONMENT_CLASSES`). Where a stand-in runs but differs from the hub's repository, or a
test was written for the vendored snapshot's diffusers rather than 0.42.1, the test fails on plain diffusers: each such
failure is recorded in `modular_plain_failures.jsonl` (a line per test: its exception type and masked message), the
plain run must fail exactly so, and the wrapped run must fail as plain diffusers does in its own process (failures.py),
arrays included. To record them again, run the plain tests with `TORCHAX_VAE_RECORD_FAILURES=FILE` and put FILE's lines
here, sorted:

    TORCHAX_VAE_PLAIN_DIFFUSERS=1 TORCHAX_VAE_RECORD_FAILURES=/tmp/r.jsonl pytest -m slow -n 2 --dist loadfile \
        tests/diffusers/tests/modular_pipelines
    sort /tmp/r.jsonl > tests/diffusers/modular_plain_failures.jsonl
"""

import json
import pathlib

HERE = pathlib.Path(__file__).parent
PREFIX = "tests/modular_pipelines/"

# file under tests/modular_pipelines -> why it does not run here (none since MiniMax Music 3's stand-in was written)
WITHOUT_STANDIN: dict[str, str] = {}
SECOND_ENVIRONMENT_CLASSES = {  # test class -> the modules it needs: Qwen-Image Edit's Qwen2-VL processor
    f"qwen/test_modular_pipeline_qwenimage.py::{cls}": ("torchvision.transforms.functional",)
    for cls in ("TestQwenImageEditModularPipelineFast", "TestQwenImageEditModularPipelineLoading",
                "TestQwenImageEditModularPipelineWorkflow", "TestQwenImageEditModularPipelineGuider",
                "TestQwenImageEditPlusModularPipelineFast", "TestQwenImageEditPlusModularPipelineLoading",
                "TestQwenImageEditPlusModularPipelineWorkflow", "TestQwenImageEditPlusModularPipelineGuider")
} | {  # MiniMax H3's stand-in (minimax_h3_standin.py): its Qwen3-VL processor's video half needs torchvision
    f"minimax_h3/test_modular_pipeline_minimax_h3.py::TestMiniMaxH3{kind}ModularPipeline{part}": ("torchvision",)
    for kind in ("", "Ref2VA") for part in ("Fast", "Loading", "Workflow", "Memory")
} | {  # Anima's stand-in (anima_standin.py): its Cosmos transformer resizes the padding mask with torchvision
    f"anima/test_modular_pipeline_anima.py::TestAnima{kind}ModularPipeline{part}": ("torchvision.transforms",)
    for kind, parts in (("", ("Fast", "Loading", "LoRA", "Workflow", "Memory", "Guider")),
                        ("Img2Img", ("Fast", "Loading", "Workflow", "Memory"))) for part in parts
}
# the modular files CI's slow set runs both ways (the others are heavy: scripts/diffusers_both_ways.py)
FILES_IN_CI = ("wan/test_modular_pipeline_wan.py",)

INDEX_DEFAULT = ("written for the recorded loading specs of the snapshot's diffusers; 0.42.1's `save_pretrained` points "
                 "the saved modular_model_index.json at the save directory (overwrite_modular_index=True by default); "
                 "it fails on plain diffusers too")
SNAPSHOT_WORKFLOWS = ("compares the workflows' blocks or components with the vendored snapshot's lists, which diffusers "
                      "0.42.1's blocks no longer match; it fails on plain diffusers too")
STANDIN_DIFFERS = ("the offline stand-in (modular_standins.py: the non-modular test's pipeline, no "
                   "modular_model_index.json) lacks a component, config or hub repository the test expects; it fails "
                   "on plain diffusers too")
NEEDS_TORCHAUDIO = ("resamples a reference soundtrack, which MiniMax H3's blocks do with torchaudio; torchaudio's wheels "
                    "need torch 2.9 (tools' env notes), not the second environment's 2.14.1; it fails on plain "
                    "diffusers too")


def reason(node: str) -> str:
    test = node.rsplit("::", 1)[-1]
    if test == "test_reference_sample_rate_override_resamples":
        return NEEDS_TORCHAUDIO
    if test == "test_modular_index_consistency" or test.startswith("test_save_pretrained_updates_index"):
        return INDEX_DEFAULT
    if "workflow" in test:
        return SNAPSHOT_WORKFLOWS
    return STANDIN_DIFFERS


RECORDED_FILE = HERE / "modular_plain_failures.jsonl"
# node (relative to this folder) -> (exception type, masked message) of its failure on plain diffusers here
RECORDED = {node: tuple(failure) for line in RECORDED_FILE.read_text().splitlines()
            for node, failure in json.loads(line).items()}
FAIL_IN_BOTH_RUNS = {node: reason(node) for node in RECORDED}

# coding=utf-8
# Copyright 2026 HuggingFace Inc.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


from diffusers.modular_pipelines import Krea2TurboAutoBlocks, Krea2TurboModularPipeline

from ..testing_utils import (
    BaseModularPipelineTesterConfig,
    ModularLoadingTesterMixin,
    ModularMemoryTesterMixin,
    ModularPipelineTesterMixin,
    ModularWorkflowTesterMixin,
)


KREA2_TURBO_WORKFLOWS = {
    "text2image": [
        ("text_encoder", "Krea2TurboTextEncoderStep"),
        ("denoise.input", "Krea2TurboTextInputsStep"),
        ("denoise.prepare_latents", "Krea2PrepareLatentsStep"),
        ("denoise.set_timesteps", "Krea2TurboSetTimestepsStep"),
        ("denoise.prepare_position_ids", "Krea2PreparePositionIdsStep"),
        ("denoise.denoise", "Krea2TurboDenoiseStep"),
        ("decode", "Krea2DecodeStep"),
    ],
}


class Krea2TurboModularPipelineTesterConfig(BaseModularPipelineTesterConfig):
    pipeline_class = Krea2TurboModularPipeline
    pipeline_blocks_class = Krea2TurboAutoBlocks
    pretrained_model_name_or_path = "hf-internal-testing/tiny-krea2-turbo-modular-pipe"
    params = frozenset(["prompt", "height", "width"])
    batch_params = frozenset(["prompt"])
    expected_workflow_blocks = KREA2_TURBO_WORKFLOWS

    def get_dummy_inputs(self, seed=0):
        generator = self.get_generator(seed)
        inputs = {
            "prompt": "A painting of a squirrel eating a burger",
            "generator": generator,
            "num_inference_steps": 2,
            "height": 32,
            "width": 32,
            "max_sequence_length": 16,
            "output_type": "pt",
        }
        return inputs


class TestKrea2TurboModularPipelineFast(Krea2TurboModularPipelineTesterConfig, ModularPipelineTesterMixin):
    def test_inference_batch_single_identical(self):
        super().test_inference_batch_single_identical(expected_max_diff=5e-3)


class TestKrea2TurboModularPipelineLoading(Krea2TurboModularPipelineTesterConfig, ModularLoadingTesterMixin):
    pass


class TestKrea2TurboModularPipelineWorkflow(Krea2TurboModularPipelineTesterConfig, ModularWorkflowTesterMixin):
    pass


class TestKrea2TurboModularPipelineMemory(Krea2TurboModularPipelineTesterConfig, ModularMemoryTesterMixin):
    pass

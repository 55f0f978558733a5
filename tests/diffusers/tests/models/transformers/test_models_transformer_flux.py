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

import os
import subprocess
import sys
import tempfile
from typing import Any

import pytest
import torch

from diffusers import BitsAndBytesConfig, FluxTransformer2DModel, GGUFQuantizationConfig
from diffusers.models.embeddings import ImageProjection
from diffusers.models.transformers.transformer_flux import FluxIPAdapterAttnProcessor
from diffusers.utils.torch_utils import randn_tensor

from ...testing_utils import enable_full_determinism, is_tensor_parallel, require_torch_neuron, torch_device
from ..testing_utils import (
    AttentionBackendTesterMixin,
    AttentionTesterMixin,
    BaseModelTesterConfig,
    BitsAndBytesCompileTesterMixin,
    BitsAndBytesTesterMixin,
    ContextParallelAttentionBackendsTesterMixin,
    ContextParallelTesterMixin,
    FasterCacheTesterMixin,
    FirstBlockCacheTesterMixin,
    GGUFCompileTesterMixin,
    GGUFTesterMixin,
    IPAdapterTesterMixin,
    LoraHotSwappingForModelTesterMixin,
    LoraTesterMixin,
    MagCacheTesterMixin,
    MemoryTesterMixin,
    ModelOptCompileTesterMixin,
    ModelOptTesterMixin,
    ModelTesterMixin,
    QuantoCompileTesterMixin,
    QuantoTesterMixin,
    SDNQCompileTesterMixin,
    SDNQTesterMixin,
    SingleFileTesterMixin,
    TaylorSeerCacheTesterMixin,
    TensorParallelTesterMixin,
    TorchAoCompileTesterMixin,
    TorchAoTesterMixin,
    TorchCompileTesterMixin,
    TrainingTesterMixin,
)


enable_full_determinism()


# TODO: This standalone function maintains backward compatibility with pipeline tests
# (tests/pipelines/test_pipelines_common.py) and will be refactored.
def create_flux_ip_adapter_state_dict(model) -> dict[str, dict[str, Any]]:
    """Create a dummy IP Adapter state dict for Flux transformer testing."""
    ip_cross_attn_state_dict = {}
    key_id = 0

    for name in model.attn_processors.keys():
        if name.startswith("single_transformer_blocks"):
            continue

        joint_attention_dim = model.config["joint_attention_dim"]
        hidden_size = model.config["num_attention_heads"] * model.config["attention_head_dim"]
        sd = FluxIPAdapterAttnProcessor(
            hidden_size=hidden_size, cross_attention_dim=joint_attention_dim, scale=1.0
        ).state_dict()
        ip_cross_attn_state_dict.update(
            {
                f"{key_id}.to_k_ip.weight": sd["to_k_ip.0.weight"],
                f"{key_id}.to_v_ip.weight": sd["to_v_ip.0.weight"],
                f"{key_id}.to_k_ip.bias": sd["to_k_ip.0.bias"],
                f"{key_id}.to_v_ip.bias": sd["to_v_ip.0.bias"],
            }
        )
        key_id += 1

    image_projection = ImageProjection(
        cross_attention_dim=model.config["joint_attention_dim"],
        image_embed_dim=(
            model.config["pooled_projection_dim"] if "pooled_projection_dim" in model.config.keys() else 768
        ),
        num_image_text_embeds=4,
    )

    ip_image_projection_state_dict = {}
    sd = image_projection.state_dict()
    ip_image_projection_state_dict.update(
        {
            "proj.weight": sd["image_embeds.weight"],
            "proj.bias": sd["image_embeds.bias"],
            "norm.weight": sd["norm.weight"],
            "norm.bias": sd["norm.bias"],
        }
    )

    del sd
    return {"image_proj": ip_image_projection_state_dict, "ip_adapter": ip_cross_attn_state_dict}


class FluxTransformerTesterConfig(BaseModelTesterConfig):
    @property
    def model_class(self):
        return FluxTransformer2DModel

    @property
    def pretrained_model_name_or_path(self):
        return "hf-internal-testing/tiny-flux-pipe"

    @property
    def pretrained_model_kwargs(self):
        return {"subfolder": "transformer"}

    @property
    def output_shape(self) -> tuple[int, int]:
        return (16, 4)

    @property
    def input_shape(self) -> tuple[int, int]:
        return (16, 4)

    @property
    def model_split_percents(self) -> list:
        return [0.9]

    @property
    def main_input_name(self) -> str:
        return "hidden_states"

    @property
    def generator(self):
        return torch.Generator("cpu").manual_seed(0)

    def get_init_dict(self) -> dict[str, int | list[int]]:
        """Return Flux model initialization arguments."""
        return {
            "patch_size": 1,
            "in_channels": 4,
            "num_layers": 1,
            "num_single_layers": 1,
            "attention_head_dim": 16,
            "num_attention_heads": 2,
            "joint_attention_dim": 32,
            "pooled_projection_dim": 32,
            "axes_dims_rope": [4, 4, 8],
        }

    def get_dummy_inputs(self, batch_size: int = 1, device=torch_device) -> dict[str, torch.Tensor]:
        height = width = 4
        num_latent_channels = 4
        num_image_channels = 3
        sequence_length = 48
        embedding_dim = 32

        return {
            "hidden_states": randn_tensor(
                (batch_size, height * width, num_latent_channels),
                generator=self.generator,
                device=device,
                dtype=self.torch_dtype,
            ),
            "encoder_hidden_states": randn_tensor(
                (batch_size, sequence_length, embedding_dim),
                generator=self.generator,
                device=device,
                dtype=self.torch_dtype,
            ),
            "pooled_projections": randn_tensor(
                (batch_size, embedding_dim),
                generator=self.generator,
                device=device,
                dtype=self.torch_dtype,
            ),
            "img_ids": randn_tensor(
                (height * width, num_image_channels),
                generator=self.generator,
                device=device,
                dtype=self.torch_dtype,
            ),
            "txt_ids": randn_tensor(
                (sequence_length, num_image_channels),
                generator=self.generator,
                device=device,
                dtype=self.torch_dtype,
            ),
            "timestep": torch.tensor([1.0]).to(device, self.torch_dtype).expand(batch_size),
        }


class TestFluxTransformer(FluxTransformerTesterConfig, ModelTesterMixin):
    def test_deprecated_inputs_img_txt_ids_3d(self):
        """Test that deprecated 3D img_ids and txt_ids still work."""
        init_dict = self.get_init_dict()
        inputs_dict = self.get_dummy_inputs()

        model = self.model_class(**init_dict)
        model.to(torch_device)
        model.eval()

        with torch.no_grad():
            output_1 = model(**inputs_dict).to_tuple()[0]

        # update inputs_dict with txt_ids and img_ids as 3d tensors (deprecated)
        text_ids_3d = inputs_dict["txt_ids"].unsqueeze(0)
        image_ids_3d = inputs_dict["img_ids"].unsqueeze(0)

        assert text_ids_3d.ndim == 3, "text_ids_3d should be a 3d tensor"
        assert image_ids_3d.ndim == 3, "img_ids_3d should be a 3d tensor"

        inputs_dict["txt_ids"] = text_ids_3d
        inputs_dict["img_ids"] = image_ids_3d

        with torch.no_grad():
            output_2 = model(**inputs_dict).to_tuple()[0]

        assert output_1.shape == output_2.shape
        assert torch.allclose(output_1, output_2, atol=1e-5), (
            "output with deprecated inputs (img_ids and txt_ids as 3d torch tensors) "
            "are not equal as them as 2d inputs"
        )


class TestFluxTransformerMemory(FluxTransformerTesterConfig, MemoryTesterMixin):
    """Memory optimization tests for Flux Transformer."""


class TestFluxTransformerTraining(FluxTransformerTesterConfig, TrainingTesterMixin):
    """Training tests for Flux Transformer."""

    def test_gradient_checkpointing_is_applied(self):
        expected_set = {"FluxTransformer2DModel"}
        super().test_gradient_checkpointing_is_applied(expected_set=expected_set)


class TestFluxTransformerAttention(FluxTransformerTesterConfig, AttentionTesterMixin):
    """Attention processor tests for Flux Transformer."""


class TestFluxTransformerAttentionBackend(FluxTransformerTesterConfig, AttentionBackendTesterMixin):
    """Attention backend tests for Flux Transformer."""


class TestFluxTransformerContextParallel(FluxTransformerTesterConfig, ContextParallelTesterMixin):
    """Context Parallel inference tests for Flux Transformer"""


class TestFluxTransformerContextParallelAttnBackends(
    FluxTransformerTesterConfig, ContextParallelAttentionBackendsTesterMixin
):
    """Context Parallel inference x attention backends tests for Flux Transformer"""


class TestFluxTransformerTensorParallel(FluxTransformerTesterConfig, TensorParallelTesterMixin):
    """Tensor Parallel inference tests for Flux Transformer (CUDA/XPU multi-accelerator)."""


def make_neuron_tp_spec():
    """Model spec consumed by the generic Neuron TP worker (`_neuron_tp_worker.py`).

    Returns `(model_class, init_dict, cpu_inputs)`. Defined here so all Flux-specific test data lives in this file
    while the worker stays model-agnostic. Reuses the shared tester config so the spec never drifts from the rest of
    the Flux tests.
    """
    config = FluxTransformerTesterConfig()
    return FluxTransformer2DModel, config.get_init_dict(), config.get_dummy_inputs(device="cpu")


@is_tensor_parallel
@require_torch_neuron
class TestFluxTransformerTensorParallelNeuron:
    """Tensor Parallel inference test for Flux Transformer on AWS Neuron.

    Neuron TP runs through `torchrun` with the `"neuron"` distributed backend, so it cannot use the
    `torch.multiprocessing`/NCCL spawn path of `TensorParallelTesterMixin`. This launches the generic worker
    with the Flux model spec (`make_neuron_tp_spec`); the worker asserts the sharded output matches a single-device
    reference, and the test checks its exit code.
    """

    def test_tensor_parallel_neuron_inference(self):
        worker = os.path.join(os.path.dirname(__file__), "_neuron_tp_worker.py")
        spec = "tests.models.transformers.test_models_transformer_flux:make_neuron_tp_spec"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", worker, spec]
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, (
            f"Neuron tensor-parallel worker failed (exit {result.returncode}).\n"
            f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
        )


class TestFluxTransformerIPAdapter(FluxTransformerTesterConfig, IPAdapterTesterMixin):
    """IP Adapter tests for Flux Transformer."""

    @property
    def ip_adapter_processor_cls(self):
        return FluxIPAdapterAttnProcessor

    def modify_inputs_for_ip_adapter(self, model, inputs_dict):
        torch.manual_seed(0)
        # Create dummy image embeds for IP adapter
        cross_attention_dim = getattr(model.config, "joint_attention_dim", 32)
        image_embeds = torch.randn(1, 1, cross_attention_dim).to(torch_device)

        inputs_dict.update({"joint_attention_kwargs": {"ip_adapter_image_embeds": image_embeds}})

        return inputs_dict

    def create_ip_adapter_state_dict(self, model: Any) -> dict[str, dict[str, Any]]:
        return create_flux_ip_adapter_state_dict(model)


class TestFluxTransformerLoRA(FluxTransformerTesterConfig, LoraTesterMixin):
    """LoRA adapter tests for Flux Transformer."""


class TestFluxTransformerLoRAHotSwap(FluxTransformerTesterConfig, LoraHotSwappingForModelTesterMixin):
    """LoRA hot-swapping tests for Flux Transformer."""

    @property
    def different_shapes_for_compilation(self):
        return [(4, 4), (4, 8), (8, 8)]

    def get_dummy_inputs(self, height: int = 4, width: int = 4) -> dict[str, torch.Tensor]:
        """Override to support dynamic height/width for LoRA hotswap tests."""
        batch_size = 1
        num_latent_channels = 4
        num_image_channels = 3
        sequence_length = 24
        embedding_dim = 32

        return {
            "hidden_states": randn_tensor((batch_size, height * width, num_latent_channels), device=torch_device),
            "encoder_hidden_states": randn_tensor((batch_size, sequence_length, embedding_dim), device=torch_device),
            "pooled_projections": randn_tensor((batch_size, embedding_dim), device=torch_device),
            "img_ids": randn_tensor((height * width, num_image_channels), device=torch_device),
            "txt_ids": randn_tensor((sequence_length, num_image_channels), device=torch_device),
            "timestep": torch.tensor([1.0]).to(torch_device).expand(batch_size),
        }


class TestFluxTransformerCompile(FluxTransformerTesterConfig, TorchCompileTesterMixin):
    @property
    def different_shapes_for_compilation(self):
        return [(4, 4), (4, 8), (8, 8)]

    def get_dummy_inputs(self, height: int = 4, width: int = 4) -> dict[str, torch.Tensor]:
        """Override to support dynamic height/width for compilation tests."""
        batch_size = 1
        num_latent_channels = 4
        num_image_channels = 3
        sequence_length = 24
        embedding_dim = 32

        return {
            "hidden_states": randn_tensor((batch_size, height * width, num_latent_channels), device=torch_device),
            "encoder_hidden_states": randn_tensor((batch_size, sequence_length, embedding_dim), device=torch_device),
            "pooled_projections": randn_tensor((batch_size, embedding_dim), device=torch_device),
            "img_ids": randn_tensor((height * width, num_image_channels), device=torch_device),
            "txt_ids": randn_tensor((sequence_length, num_image_channels), device=torch_device),
            "timestep": torch.tensor([1.0]).to(torch_device).expand(batch_size),
        }


class TestFluxSingleFile(FluxTransformerTesterConfig, SingleFileTesterMixin):
    @property
    def ckpt_path(self):
        return "https://huggingface.co/black-forest-labs/FLUX.1-dev/blob/main/flux1-dev.safetensors"

    @property
    def pretrained_model_name_or_path(self):
        return "black-forest-labs/FLUX.1-dev"

    @property
    def torch_dtype(self):
        return torch.bfloat16


class TestFluxTransformerBitsAndBytes(FluxTransformerTesterConfig, BitsAndBytesTesterMixin):
    """BitsAndBytes quantization tests for Flux Transformer."""

    modules_to_not_convert_for_test = ["proj_out"]

    @property
    def torch_dtype(self):
        return torch.float16

    def get_dummy_inputs(self):
        """Override to build inputs in the quantizer compute dtype (excluded/unquantized linears
        do strict-dtype matmuls)."""
        inputs = super().get_dummy_inputs()
        return {k: v.to(self.torch_dtype) if torch.is_floating_point(v) else v for k, v in inputs.items()}


class TestFluxTransformerQuanto(FluxTransformerTesterConfig, QuantoTesterMixin):
    """Quanto quantization tests for Flux Transformer."""

    @property
    def pretrained_model_name_or_path(self):
        return "hf-internal-testing/tiny-flux-transformer"

    @property
    def pretrained_model_kwargs(self):
        return {}


class TestFluxTransformerTorchAo(FluxTransformerTesterConfig, TorchAoTesterMixin):
    """TorchAO quantization tests for Flux Transformer."""

    modules_to_not_convert_for_test = ["proj_out"]

    @property
    def torch_dtype(self):
        return torch.bfloat16

    def get_dummy_inputs(self):
        """Override to build inputs in the quantizer compute dtype (excluded/unquantized linears
        do strict-dtype matmuls)."""
        inputs = super().get_dummy_inputs()
        return {k: v.to(self.torch_dtype) if torch.is_floating_point(v) else v for k, v in inputs.items()}


class TestFluxTransformerGGUF(FluxTransformerTesterConfig, GGUFTesterMixin):
    @property
    def gguf_filename(self):
        return "https://huggingface.co/city96/FLUX.1-dev-gguf/blob/main/flux1-dev-Q2_K.gguf"

    @property
    def torch_dtype(self):
        return torch.bfloat16

    def get_dummy_inputs(self):
        """Override to provide inputs matching the real FLUX model dimensions."""
        return {
            "hidden_states": randn_tensor(
                (1, 4096, 64), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "encoder_hidden_states": randn_tensor(
                (1, 512, 4096), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "pooled_projections": randn_tensor(
                (1, 768), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "timestep": torch.tensor([1]).to(torch_device, self.torch_dtype),
            "img_ids": randn_tensor((4096, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "txt_ids": randn_tensor((512, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "guidance": torch.tensor([3.5]).to(torch_device, self.torch_dtype),
        }

    @torch.no_grad()
    def test_loading_gguf_diffusers_format(self):
        model = self.model_class.from_single_file(
            "https://huggingface.co/sayakpaul/flux-diffusers-gguf/blob/main/model-Q4_0.gguf",
            subfolder="transformer",
            quantization_config=GGUFQuantizationConfig(compute_dtype=self.torch_dtype),
            config="black-forest-labs/FLUX.1-dev",
        )
        model.to(torch_device)
        model(**self.get_dummy_inputs())


class TestFluxTransformerQuantoCompile(FluxTransformerTesterConfig, QuantoCompileTesterMixin):
    """Quanto + compile tests for Flux Transformer."""


class TestFluxTransformerTorchAoCompile(FluxTransformerTesterConfig, TorchAoCompileTesterMixin):
    """TorchAO + compile tests for Flux Transformer."""

    @property
    def torch_dtype(self):
        return torch.bfloat16


class TestFluxTransformerGGUFCompile(FluxTransformerTesterConfig, GGUFCompileTesterMixin):
    @property
    def gguf_filename(self):
        return "https://huggingface.co/city96/FLUX.1-dev-gguf/blob/main/flux1-dev-Q2_K.gguf"

    @property
    def torch_dtype(self):
        return torch.bfloat16

    def get_dummy_inputs(self):
        """Override to provide inputs matching the real FLUX model dimensions."""
        return {
            "hidden_states": randn_tensor(
                (1, 4096, 64), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "encoder_hidden_states": randn_tensor(
                (1, 512, 4096), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "pooled_projections": randn_tensor(
                (1, 768), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "timestep": torch.tensor([1]).to(torch_device, self.torch_dtype),
            "img_ids": randn_tensor((4096, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "txt_ids": randn_tensor((512, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "guidance": torch.tensor([3.5]).to(torch_device, self.torch_dtype),
        }


class TestFluxTransformerModelOpt(FluxTransformerTesterConfig, ModelOptTesterMixin):
    """ModelOpt quantization tests for Flux Transformer."""


class TestFluxTransformerModelOptCompile(FluxTransformerTesterConfig, ModelOptCompileTesterMixin):
    """ModelOpt + compile tests for Flux Transformer."""


class FluxTransformerSDNQTesterConfig(FluxTransformerTesterConfig):
    """Shared config for SDNQ Flux Transformer tests (loads the standalone tiny transformer)."""

    modules_to_not_convert_for_test = ["to_k"]

    @property
    def pretrained_model_name_or_path(self):
        return "hf-internal-testing/tiny-flux-transformer"

    @property
    def pretrained_model_kwargs(self):
        return {}

    def get_dummy_inputs(self):
        """Override to provide inputs matching the tiny-flux-transformer config dimensions."""
        return {
            "hidden_states": randn_tensor(
                (1, 4096, 64), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "encoder_hidden_states": randn_tensor(
                (1, 512, 4096), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "pooled_projections": randn_tensor(
                (1, 768), generator=self.generator, device=torch_device, dtype=self.torch_dtype
            ),
            "timestep": torch.tensor([1]).to(torch_device, self.torch_dtype),
            "img_ids": randn_tensor((4096, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "txt_ids": randn_tensor((512, 3), generator=self.generator, device=torch_device, dtype=self.torch_dtype),
            "guidance": torch.tensor([3.5]).to(torch_device, self.torch_dtype),
        }


class TestFluxTransformerSDNQ(FluxTransformerSDNQTesterConfig, SDNQTesterMixin):
    """SDNQ quantization tests for Flux Transformer."""


class TestFluxTransformerSDNQCompile(FluxTransformerSDNQTesterConfig, SDNQCompileTesterMixin):
    """SDNQ + compile tests for Flux Transformer."""


class TestFluxTransformerBitsAndBytesCompile(FluxTransformerTesterConfig, BitsAndBytesCompileTesterMixin):
    """BitsAndBytes + compile tests for Flux Transformer."""

    def get_init_dict(self) -> dict[str, int | list[int]]:
        # Dims must be multiples of 64 (bnb 4bit blocksize) so single-token activations
        # don't trigger the runtime `warn()` inside bnb.matmul_4bit that breaks fullgraph compile.
        return {
            "patch_size": 1,
            "in_channels": 4,
            "num_layers": 1,
            "num_single_layers": 1,
            "attention_head_dim": 32,
            "num_attention_heads": 2,
            "joint_attention_dim": 64,
            "pooled_projection_dim": 64,
            "axes_dims_rope": [8, 8, 16],
        }

    def get_dummy_inputs(self, batch_size: int = 1) -> dict[str, torch.Tensor]:
        inputs = super().get_dummy_inputs(batch_size=batch_size)
        embedding_dim = 64
        sequence_length = inputs["encoder_hidden_states"].shape[1]
        inputs["encoder_hidden_states"] = randn_tensor(
            (batch_size, sequence_length, embedding_dim),
            generator=self.generator,
            device=torch_device,
            dtype=self.torch_dtype,
        )
        inputs["pooled_projections"] = randn_tensor(
            (batch_size, embedding_dim), generator=self.generator, device=torch_device, dtype=self.torch_dtype
        )
        return inputs

    def _create_quantized_model(self, config_kwargs, **extra_kwargs):
        config_kwargs = {**config_kwargs, "bnb_4bit_compute_dtype": self.torch_dtype}
        bnb_config = BitsAndBytesConfig(**config_kwargs)
        base_model = self.model_class(**self.get_init_dict()).to(self.torch_dtype)
        with tempfile.TemporaryDirectory() as tmp_dir:
            base_model.save_pretrained(tmp_dir)
            del base_model
            return self.model_class.from_pretrained(
                tmp_dir, quantization_config=bnb_config, torch_dtype=self.torch_dtype, **extra_kwargs
            )

    @pytest.mark.parametrize("config_name", ["4bit_nf4"], ids=["4bit_nf4"])
    def test_bnb_torch_compile_with_group_offload(self, config_name):
        # use_stream=True is required: bnb 4bit kernels read device pointers eagerly, so
        # without an explicit prefetch-stream sync we hit "illegal memory access" in
        # bnb/csrc/ops.cu. The pipeline-level Bnb4BitCompileTests override does the same.
        self._test_torch_compile_with_group_offload(self.BNB_CONFIGS[config_name], use_stream=True)


class TestFluxTransformerFBCCache(FluxTransformerTesterConfig, FirstBlockCacheTesterMixin):
    """FirstBlockCache tests for Flux Transformer."""


class TestFluxTransformerFasterCache(FluxTransformerTesterConfig, FasterCacheTesterMixin):
    """FasterCache tests for Flux Transformer."""

    # Flux is guidance distilled, so we can test at model level without CFG batch handling
    FASTER_CACHE_CONFIG = {
        "spatial_attention_block_skip_range": 2,
        "spatial_attention_timestep_skip_range": (-1, 901),
        "tensor_format": "BCHW",
        "is_guidance_distilled": True,
    }


class TestFluxTransformerMagCache(FluxTransformerTesterConfig, MagCacheTesterMixin):
    """MagCache tests for Flux Transformer."""


class TestFluxTransformerTaylorSeerCache(FluxTransformerTesterConfig, TaylorSeerCacheTesterMixin):
    """TaylorSeerCache tests for Flux Transformer."""

from .cache import (
    CacheTesterMixin,
    FasterCacheTesterMixin,
    FirstBlockCacheTesterMixin,
    MagCacheTesterMixin,
    PyramidAttentionBroadcastTesterMixin,
    TaylorSeerCacheTesterMixin,
)
from .common import BasePipelineTesterConfig, PipelineTesterMixin
from .lora import LoraMemoryTesterMixin, LoraTesterMixin, UNetLoraTesterMixin
from .memory import (
    GroupOffloadTesterMixin,
    LayerwiseCastingTesterMixin,
    MemoryTesterMixin,
    PipelineOffloadTesterMixin,
)
from .utils import (
    check_qkv_fused_layers_exist,
    check_qkv_fusion_matches_attn_procs_length,
    check_qkv_fusion_processors_exist,
    check_same_shape,
)


__all__ = [
    "BasePipelineTesterConfig",
    "PipelineTesterMixin",
    "LoraTesterMixin",
    "LoraMemoryTesterMixin",
    "UNetLoraTesterMixin",
    "MemoryTesterMixin",
    "PipelineOffloadTesterMixin",
    "GroupOffloadTesterMixin",
    "LayerwiseCastingTesterMixin",
    "CacheTesterMixin",
    "PyramidAttentionBroadcastTesterMixin",
    "FasterCacheTesterMixin",
    "FirstBlockCacheTesterMixin",
    "TaylorSeerCacheTesterMixin",
    "MagCacheTesterMixin",
    "check_qkv_fused_layers_exist",
    "check_qkv_fusion_matches_attn_procs_length",
    "check_qkv_fusion_processors_exist",
    "check_same_shape",
]

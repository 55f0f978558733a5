from .common import (
    BaseModularPipelineOutputMixin,
    BaseModularPipelineTesterConfig,
    ModularPipelineTesterMixin,
)
from .guider import ModularGuiderTesterMixin
from .loading import ModularLoadingTesterMixin
from .memory import (
    ModularAutoOffloadTesterMixin,
    ModularGroupOffloadTesterMixin,
    ModularMemoryTesterMixin,
    ModularOffloadTesterMixin,
)
from .utils import backend_memory_allocated, get_specified_components, patch_free_memory
from .workflow import ModularWorkflowTesterMixin


__all__ = [
    "BaseModularPipelineOutputMixin",
    "BaseModularPipelineTesterConfig",
    "ModularAutoOffloadTesterMixin",
    "ModularGroupOffloadTesterMixin",
    "ModularGuiderTesterMixin",
    "ModularLoadingTesterMixin",
    "ModularMemoryTesterMixin",
    "ModularOffloadTesterMixin",
    "ModularPipelineTesterMixin",
    "ModularWorkflowTesterMixin",
    "backend_memory_allocated",
    "get_specified_components",
    "patch_free_memory",
]

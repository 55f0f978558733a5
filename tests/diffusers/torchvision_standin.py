"""torchvision's `to_tensor`, for the vendored file that imports it at its top and this environment cannot give it.

diffusers' `test_models_autoencoder_rae.py` imports `torchvision.transforms.functional.to_tensor` for its hub
integration tests (skipped there: "Not enough model usage"). PyPI's torchvision does not import beside this project's
CPU torch 2.13 (SOURCE.md), so while that file is collected (conftest.py) the import finds this stand-in, and the
name is gone from `sys.modules` again after: nothing else, diffusers' `is_torchvision_available()` included, sees it.
"""

import contextlib
import sys
import types

import numpy as np
import torch

NAMES = ("torchvision", "torchvision.transforms", "torchvision.transforms.functional")


def to_tensor(pic) -> torch.Tensor:
    """torchvision's `to_tensor` of a PIL image or an [H, W(, C)] array: [C, H, W], uint8 scaled to float [0, 1],
    other dtypes as they are."""
    array = np.array(pic, copy=True)
    if array.ndim == 2:
        array = array[:, :, None]
    tensor = torch.from_numpy(array).permute(2, 0, 1).contiguous()
    return tensor.to(torch.get_default_dtype()).div(255) if tensor.dtype == torch.uint8 else tensor


@contextlib.contextmanager
def standin():
    """`import torchvision.transforms.functional` finds `to_tensor` alone, inside the block."""
    saved = {name: sys.modules.get(name) for name in NAMES}
    package, transforms, functional = (types.ModuleType(name) for name in NAMES)
    package.__path__, transforms.__path__ = [], []  # (packages, so that their submodules import)
    package.transforms, transforms.functional, functional.to_tensor = transforms, functional, to_tensor
    sys.modules.update(zip(NAMES, (package, transforms, functional)))
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

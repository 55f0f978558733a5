"""Refining a model's layers in place: each instance of some classes gets a subclass with a patched method.

Several patches (causal_mask, zero_history, halo_conv) give diffusers' layers a subclass made once per
class (a marker class first in its bases, so a layer is refined once and the original method is
`super(Marker, self)`'s). This is the loop they share.
"""

from torch import nn


def refine(model: nn.Module, classes: tuple, marker: type, subclass, where=None) -> int:
    """Every module of `model` that is an instance of `classes` and not yet of `marker` (and for which
    `where(module)` holds, when given) becomes `subclass(type(module))`; returns how many."""
    count = 0
    for module in model.modules():
        if (classes and isinstance(module, classes) and not isinstance(module, marker)
                and (where is None or where(module))):
            module.__class__ = subclass(type(module))
            count += 1
    return count

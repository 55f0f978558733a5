"""HunyuanVideo 1.5's frame-causal attention mask as one vectorized expression, not a loop over tokens.

Upstream: diffusers' `HunyuanVideo15AttnBlock.prepare_causal_attention_mask` fills a [tokens, tokens] mask with
-inf and then, in a Python loop over every token, zeroes the row's keys up to the end of its frame. Traced
through torchax that is one scatter per token: 8448 for one 256 x 256 tile of a 129-frame video (33 latent
frames of 16 x 16), 118800 for an untiled 720p one, each traced, lowered and compiled.

Here: the same values from one comparison of frame indices (a key is visible where its frame is at most the
query's), built in the mask's dtype on the query's device, as one [tokens, tokens] mask that broadcasts over the
batch. diffusers expands its mask to [B, tokens, tokens], which broadcasts against the [B, 1, tokens, C] queries
as [B, B, ...]: its own class fails for a batch of two or more unless slicing is on. Here a batch gives what
diffusers gives each sample with slicing. Same mask element for element (tests/test_patches.py::test_causal_mask_*);
every trace, every platform. Still needed while diffusers loops.
"""

import functools

import torch
from diffusers.models.autoencoders.autoencoder_kl_hunyuanvideo15 import HunyuanVideo15AttnBlock
from torch import nn

from torchax_vae.patches.refine import refine

CLASSES = (HunyuanVideo15AttnBlock,)


def causal_attention_mask(n_frame: int, n_hw: int, dtype, device, batch_size: int | None = None) -> torch.Tensor:
    """diffusers' mask: 0 where the key's frame is at most the query's, -inf elsewhere; [tokens, tokens] for
    every `batch_size` (it broadcasts over the batch and the head)."""
    frame = torch.arange(n_frame * n_hw, device=device) // n_hw
    visible = frame[None, :] <= frame[:, None]
    return torch.zeros(visible.shape, dtype=dtype, device=device).masked_fill(~visible, float("-inf"))


class _Vectorized:
    """Marks the classes `vectorized` makes."""


@functools.cache
def vectorized(cls: type) -> type:
    """A subclass of an attention block class with the vectorized mask."""
    return type(f"Vectorized{cls.__name__}", (_Vectorized, cls),
                {"prepare_causal_attention_mask": staticmethod(causal_attention_mask), "__module__": __name__})


def patch(model: nn.Module) -> int:
    """Gives every HunyuanVideo 1.5 attention block of `model` the vectorized mask; returns how many."""
    return refine(model, CLASSES, _Vectorized, vectorized)

"""The torch module surface of a TorchaxVAE: what pipelines and users touch besides encode and decode.

dtype and device, casts, state_dict and parameters (copies of the JAX weights: torchax_vae/engine/weights.py),
training mode, gradient checkpointing, slicing. A mixin of `torchax_vae.facade.vae.TorchaxVAE`, before
`ModelMixin` in its bases, so these take the place of `nn.Module`'s.
"""


from typing import Self

import torch

from torchax_vae.engine import convert, weights
from torchax_vae.engine.arrays import is_abstract



class ModuleSurface:
    """nn.Module's surface over JAX weights (the module doc)."""

    @property
    def dtype(self) -> torch.dtype:
        return self._engine.dtype

    @property
    def device(self) -> torch.device:
        """The torch device the wrapped model was on; results go to the caller's input device."""
        return self._device

    @property
    def _keep_in_fp32(self) -> tuple:
        """The wrapped class's modules diffusers keeps in float32 under any dtype (weights.compute_dtype)."""
        return tuple(getattr(self.model_class, "_keep_in_fp32_modules", None) or ())

    def to(self, *args, **kwargs) -> Self:
        """Like `nn.Module.to`: a dtype recasts the JAX weights; a device is recorded, compute stays on JAX."""
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if device is not None:
            self._device = torch.device(device)
        engine = self._engine
        if dtype is not None and self._keep_in_fp32:  # diffusers' ModelMixin.to warns so, and casts every module
            from diffusers.utils import logging as diffusers_logging

            diffusers_logging.get_logger("diffusers.models.modeling_utils").warning(
                f"There are modules in {self.__class__.__name__} that should be kept in float32: "
                f"{self.model_class._keep_in_fp32_modules}. Casting directly with `to()` can lead to inconsistent "
                "results; set `torch_dtype` in `from_pretrained()` instead to keep these modules in float32.")
        if dtype is not None and (dtype != engine.dtype or self._keep_in_fp32):
            engine.weights = weights.recast(engine.weights, convert.jax_dtype(dtype), ())
            engine.dtype = dtype
        return self

    def float(self) -> Self:
        return self.to(torch.float32)

    def bfloat16(self) -> Self:
        return self.to(torch.bfloat16)

    def half(self) -> Self:
        return self.to(torch.float16)

    # ----- the torch module surface: weights, training state (torchax_vae/engine/weights.py, gradients.py) -----

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """The wrapped model's state_dict (its keys and shapes), holding copies of the weights this computes with.

        Copies on `self.device`, made by this call: editing them changes nothing
        here (`load_state_dict` does). While held they take one model's worth of
        memory (705 M parameters of Wan 2.2: 2.8 GB in fp32, 1.4 GB in bf16).
        A wrapper of a meta-device model gives meta tensors.
        """
        if args:  # torch's deprecated positional (destination, prefix, keep_vars)
            destination, prefix = (list(args) + [destination, prefix])[:2]
        return weights.state_dict(self._engine.weights, self._entries, self._copy_device(), prefix, destination)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Replaces the weights by those of `state_dict` (the wrapped model's keys), as `nn.Module.load_state_dict`.

        Keys and shapes are checked first, under torch's rules: with `strict`, a
        missing or unexpected key raises RuntimeError; a wrong shape always does;
        either way no weight changes. Floating-point tensors are cast to this
        wrapper's dtype. The next call computes with the new weights without
        compiling anything. `assign` is accepted for torch's signature: the
        tensors are always copied to the JAX device.

        Returns:
            `NamedTuple` with `missing_keys` and `unexpected_keys`, as torch.
        """
        engine = self._engine
        return weights.load(engine.weights, self._entries, state_dict, strict=strict,
                            dtype=engine.jax_dtype, sharding=engine.placement.replicated,
                            owner=type(self).__name__, keep=self._keep_in_fp32)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The wrapped model's parameters as `nn.Parameter` copies on `self.device`, one made per step.

        `next(vae.parameters())` costs one small copy; `num_parameters()` counts
        them all. They do not require grad: gradients flow to inputs, not weights.
        """
        yield from weights.named(self._engine.weights, self._entries, self._copy_device(), parameters=True, prefix=prefix)

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """The wrapped model's buffers, as copies (see `named_parameters`)."""
        yield from weights.named(self._engine.weights, self._entries, self._copy_device(), parameters=False, prefix=prefix)

    def __getattr__(self, name: str):
        """The family's settings (`tile_sample_min_height`, ...: the family's loops read them, `Family.settings`);
        the wrapped model's top-level submodules, as diffusers' pipelines read them: a read-only view
        (`weights.Submodule`) of each one's tensors, or None where the model has None there (Flux's
        `post_quant_conv`); anything else is torch's and diffusers' own lookup."""
        family = self.__dict__.get("_family")
        if family is not None and name in family.settings:
            return getattr(family, name)
        try:
            return super().__getattr__(name)
        except AttributeError:
            children = self.__dict__.get("_children", {})
            if name not in children:
                raise
        return weights.Submodule(self, name) if children[name] else None

    def _copy_device(self) -> torch.device:
        return torch.device("meta") if is_abstract(self._engine.weights) else self._device

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """`requires_grad_(False)` (freezing the VAE, as training scripts do) is what a TorchaxVAE always is.

        Gradients reach a TorchaxVAE's inputs (`encode`'s video, `decode`'s
        latents), never its weights, so `requires_grad_(True)` raises.
        """
        if requires_grad:
            raise NotImplementedError(
                "a TorchaxVAE computes gradients for its inputs only, not for its weights (they are constants of "
                "the JAX programs); fine-tune the diffusers model in PyTorch, then load_state_dict its weights here"
            )
        return self

    def train(self, mode: bool = True) -> Self:
        """Sets `training`, as torch does; the programs compute the same in both modes.

        They are traced in eval mode, which is the same computation for models
        without dropout (p > 0) or batch norm: every released VAE of the served classes.
        A model with such layers may be wrapped and put in training mode (diffusers'
        tests build them so, and call .eval() later), but computing with it in
        training mode raises (`Engine.check_training`: dropout drawn as torch draws
        it is not done, docs/limits.md).
        """
        self.training = bool(mode)
        self._engine.training_refusal = None if not (self.training and self._stochastic) else (
            f"this model has layers that differ in training mode ({', '.join(self._stochastic[:3])}); a "
            "TorchaxVAE computes in eval mode: call .eval(), or run the diffusers model in PyTorch to train it")
        return self

    def eval(self) -> Self:
        return self.train(False)

    def enable_gradient_checkpointing(self, gradient_checkpointing_func=None) -> None:
        """Trades compute for memory in the backward pass, as diffusers' does.

        Each program keeps only its inputs for the backward pass and runs again
        there (`jax.checkpoint`), instead of keeping its activations.
        `gradient_checkpointing_func` (a torch function) cannot apply to JAX programs.
        """
        if gradient_checkpointing_func is not None:
            raise ValueError("a TorchaxVAE checkpoints its JAX programs with jax.checkpoint; "
                             "gradient_checkpointing_func (a torch function) cannot apply: leave it None")
        self.gradient_checkpointing = True

    def disable_gradient_checkpointing(self) -> None:
        self.gradient_checkpointing = False

    @property
    def gradient_checkpointing(self) -> bool:
        return self._engine.programs.checkpoint

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value: bool) -> None:
        self._engine.programs.checkpoint = bool(value)

    def modules(self):
        """Like `nn.Module.modules()`: this wrapper alone (its weights live in JAX, in no torch submodule).

        diffusers' `get_module_execution_device` walks it looking for offload hooks, then reads `device`.
        """
        yield self

    def enable_slicing(self) -> None:
        """Encode and decode one batch element at a time."""
        self.use_slicing = True

    def disable_slicing(self) -> None:
        self.use_slicing = False


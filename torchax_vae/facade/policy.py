"""How a TorchaxVAE decides per call, as diffusers' users set it: the tiling mode ("auto" tiles only what would not
fit, by `memory.call_bytes`), the memory budget, how hard XLA optimizes (`compile_effort`, per backend:
torchax_vae/placement/backends.py). The state is the engine's (torchax_vae/engine/runtime.py); these are the facade's properties.

A mixin of `torchax_vae.facade.vae.TorchaxVAE`; it reads `_engine`. `tiling_switch` makes a facade class's
`enable_tiling` from the names of diffusers' arguments, and `refused` diffusers' refusal where a class has no tiling
or slicing.
"""

import inspect


def tiling_switch(*arguments: str):
    """diffusers' `enable_tiling(<arguments>=None, ...)` of a class: tiling on (mode "on"), and each argument given
    sets the setting of its name, the current one staying where None (diffusers' `x or self.x`)."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    signature = inspect.Signature([inspect.Parameter("self", keyword),
                                   *(inspect.Parameter(name, keyword, default=None) for name in arguments)],
                                  return_annotation=None)

    def enable_tiling(self, *args, **kwargs) -> None:
        given = signature.bind(self, *args, **kwargs).arguments
        self.tiling_mode = "on"
        for name in arguments:
            if given.get(name):
                setattr(self, name, given[name])

    enable_tiling.__signature__ = signature
    enable_tiling.__doc__ = (f"Tiled encode and decode (mode \"on\"), with diffusers' arguments for this class "
                             f"({', '.join(arguments) or 'none'}): the current settings where None.")
    return enable_tiling


def refused(what: str):
    """diffusers' `enable_tiling` / `enable_slicing` of a class without that flag: AutoencoderMixin's refusal."""

    def refuse(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"{what.capitalize()} doesn't seem to be implemented for "
                                  f"{type(self).model_class.__name__}.")

    refuse.__doc__ = f"Refused, as diffusers refuses it for this class (it has no {what})."
    return refuse


class Policy:
    """`tiling_mode`, `use_tiling`, `memory_budget`, `compile_effort` and `compile_stats` (the module doc)."""

    @property
    def tiling_mode(self) -> str:
        """"on", "off", or "auto" (tile an input larger than a tile only when it would not fit untiled)."""
        return self._engine.tiling_mode

    @tiling_mode.setter
    def tiling_mode(self, mode: str) -> None:
        self._engine.tiling_mode = mode

    @property
    def use_tiling(self) -> bool:
        """diffusers' flag: True when tiling is forced on."""
        return self._engine.tiling_mode == "on"

    @use_tiling.setter
    def use_tiling(self, value: bool) -> None:
        self._engine.tiling_mode = "on" if value else "off"

    def disable_tiling(self) -> None:
        """Never tile (mode "off"), even where the untiled programs would not fit."""
        self.tiling_mode = "off"

    @property
    def memory_budget(self) -> int | None:
        """Bytes the "auto" tiling mode lets one program use (per device); None: what the device reports free."""
        return self._engine.memory_budget

    @memory_budget.setter
    def memory_budget(self, budget: int | None) -> None:
        self._engine.memory_budget = budget

    @property
    def compile_effort(self):
        """How hard XLA optimizes each program: "auto" (the default), or XLA's `exec_time_optimization_effort`
        from -1.0 (fastest compile) to 1.0 (0.0: XLA's own default).

        "auto" is -0.5 on TPUs and XLA's default elsewhere (torchax_vae/placement/backends.py). libtpu spends about 3 s per
        convolution at its default effort: CogVideoX's first 480x720 decoder batch compiled in 135 s for v6e-8,
        at -0.5 in 34 s, with the same FLOPs and fewer bytes accessed by XLA's count (compiled offline; speed on
        a TPU unmeasured: docs/results/tpu.md). Set 0.0 for XLA's full effort. Programs compiled before a change are kept.
        """
        return self._engine.compile_effort

    @compile_effort.setter
    def compile_effort(self, effort) -> None:
        self._engine.compile_effort = effort

    def compile_stats(self) -> list[dict]:
        """One dict per compiled program: name, input_shapes, lower/compile seconds, devices, flops, temp_bytes."""
        return self._engine.programs.stats()

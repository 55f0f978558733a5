"""How a TorchaxVAE decides per call: its tiling mode ("auto" tiles only what would not fit, by
`memory.call_bytes`) and how hard XLA optimizes (compile_effort, per backend: torchax_vae/backends.py).

A mixin of `torchax_vae.vae.TorchaxVAE`; it reads `_placement`, `_programs` and `memory_budget`.
"""

import logging

import jax

from . import memory
from .backends import compiler_options

logger = logging.getLogger("torchax_vae.vae")


class TilingAndEffort:
    """`tiling_mode`, `use_tiling`, `memory_budget`'s use, and `compile_effort` (the module doc)."""

    @property
    def tiling_mode(self) -> str:
        """"on", "off", or "auto" (tile an input larger than a tile only when it would not fit untiled)."""
        return self._tiling

    @tiling_mode.setter
    def tiling_mode(self, mode: str) -> None:
        if mode not in ("on", "off", "auto"):
            raise ValueError(f"tiling_mode must be 'on', 'off' or 'auto', got {mode!r}")
        self._tiling = mode

    @property
    def use_tiling(self) -> bool:
        """diffusers' flag: True when tiling is forced on."""
        return self._tiling == "on"

    @use_tiling.setter
    def use_tiling(self, value: bool) -> None:
        self._tiling = "on" if value else "off"

    def disable_tiling(self) -> None:
        """Never tile (mode "off"), even where the untiled programs would not fit."""
        self.tiling_mode = "off"

    def _should_tile(self, name: str, need, shape, tile) -> bool:
        """Whether to tile an input larger than a tile: "on"/"off" as set; in "auto", if the untiled call would not fit.

        need: a function giving the bytes the untiled call needs (it compiles programs, so only "auto" calls it).
        """
        if self._tiling != "auto":
            return self._tiling == "on"
        budget = self.memory_budget
        if budget is None:
            budget = memory.free_bytes(self._placement.local_device())
        if budget is None:
            return False
        with self._programs.probe():
            try:
                needed = need()
            except jax.errors.JaxRuntimeError as error:  # libtpu refuses to compile what cannot fit its HBM
                if "RESOURCE_EXHAUSTED" not in str(error):
                    raise
                needed = float("inf")
        if needed <= budget:
            return False
        if not self._auto_tiling_logged:
            logger.warning(
                "TorchaxVAE: the untiled %s needs %.3g GB for input %s, more than the %.3g GB available; "
                "tiling it in %dx%d tiles. enable_tiling()/disable_tiling() force the choice.",
                name, needed / 1e9, tuple(shape), budget / 1e9, *tile,
            )
            self._auto_tiling_logged = True
        return True

    @property
    def compile_effort(self):
        """How hard XLA optimizes each program: "auto" (the default), or XLA's `exec_time_optimization_effort`
        from -1.0 (fastest compile) to 1.0 (0.0: XLA's own default).

        "auto" is -0.5 on TPUs and XLA's default elsewhere. libtpu spends about 3 s per convolution at its
        default effort: CogVideoX's first 480x720 decoder batch compiled in 135 s for v6e-8, at -0.5 in 34 s,
        with the same FLOPs and fewer bytes accessed by XLA's count (compiled offline; speed on a TPU
        unmeasured: docs/tpu.md). Set 0.0 for XLA's full effort. Programs compiled before a change are kept.
        """
        return self._compile_effort

    @compile_effort.setter
    def compile_effort(self, effort) -> None:
        if effort != "auto" and not (isinstance(effort, (int, float)) and not isinstance(effort, bool)
                                     and -1.0 <= effort <= 1.0):
            raise ValueError(f"compile_effort must be 'auto' or a number from -1.0 to 1.0, got {effort!r}")
        self._compile_effort = effort
        self._programs.compiler_options = compiler_options(self._placement.platform, effort)

    def compile_stats(self) -> list[dict]:
        """One dict per compiled program: name, input_shapes, lower/compile seconds, devices, flops, temp_bytes."""
        return self._programs.stats()


"""What computes for one TorchaxVAE: its dtype, placement, compiled programs and weights, and the per-call
decisions every family asks of it (tile or not, how hard XLA optimizes, may training mode compute).

The facade (torchax_vae/facade/vae.py) owns one `Engine` and hands it to its family object (torchax_vae/facade/family.py),
whose loops run programs through it. Nothing else holds this state: casts and `load_state_dict` change
`dtype` and `weights` here, and the next call of any thread computes with them.
"""

import logging

import jax
import torch

from torchax_vae import progress
from torchax_vae.engine import convert, memory
from torchax_vae.placement.backends import compiler_options
from torchax_vae.placement.mesh import Placement
from torchax_vae.engine.programs import Programs
from torchax_vae.engine.sources import ShapeSource

logger = logging.getLogger("torchax_vae.facade.vae")

TILING_MODES = ("on", "off", "auto")


class Engine:
    """dtype, placement, programs and weights, and the tiling and compile policy (the module doc).

    Args:
        dtype: the compute dtype (a torch dtype).
        placement: where inputs, weights and activations live (torchax_vae/placement/mesh.py).
        programs: the compiled-program cache (torchax_vae/engine/programs.py).
        memory_budget: bytes the "auto" tiling mode lets one program use (None: what the device reports free).
    """

    def __init__(self, dtype: torch.dtype, placement: Placement, programs: Programs, memory_budget: int | None = None):
        if memory_budget is not None and (not isinstance(memory_budget, int) or memory_budget <= 0):
            raise ValueError(f"memory_budget must be a positive number of bytes, got {memory_budget!r}")
        self.dtype = dtype
        self.placement = placement
        self.programs = programs
        self.memory_budget = memory_budget
        self.weights: dict = {}  # grouped by the model's top-level child (lowering.jax_weights); set by the facade
        self.tiling_mode = "auto"
        self.compile_effort = "auto"
        # Why computing now would differ from the eval-mode programs (training mode with dropout or batch norm),
        # or None: set by the facade's `train`.
        self.training_refusal: str | None = None
        self._tiling_logged = False  # the "auto" tiling message, once per TorchaxVAE

    @property
    def jax_dtype(self):
        return convert.jax_dtype(self.dtype)

    @property
    def tiling_mode(self) -> str:
        return self._tiling

    @tiling_mode.setter
    def tiling_mode(self, mode: str) -> None:
        if mode not in TILING_MODES:
            raise ValueError(f"tiling_mode must be 'on', 'off' or 'auto', got {mode!r}")
        self._tiling = mode

    @property
    def compile_effort(self):
        return self._compile_effort

    @compile_effort.setter
    def compile_effort(self, effort) -> None:
        if effort != "auto" and not (isinstance(effort, (int, float)) and not isinstance(effort, bool)
                                     and -1.0 <= effort <= 1.0):
            raise ValueError(f"compile_effort must be 'auto' or a number from -1.0 to 1.0, got {effort!r}")
        self._compile_effort = effort
        self.programs.compiler_options = compiler_options(self.placement.platform, effort)

    def shapes(self, shape) -> ShapeSource:
        """A shape-only source of an input of `shape` in the compute dtype, placed as a real one would be."""
        return ShapeSource(tuple(shape), self.jax_dtype, self.placement)

    def run_batch(self, name: str, step, weights, *args):
        """One encoder or decoder call: the program `name` of `step` run on `weights` and `args`, its output handed
        to the call's observer (`ran_batch`)."""
        out = self.programs.run(name, step, weights, *args)
        self.ran_batch(out)
        return out

    @staticmethod
    def ran_batch(output) -> None:
        """Hands a queued encoder/decoder call's output (a JAX array or pytree, or its shapes) to the call's
        observer (torchax_vae/progress.py)."""
        progress.ran_batch(output)

    def check_training(self) -> None:
        """Refuses to compute where training mode would compute otherwise than the programs (`training_refusal`)."""
        if self.training_refusal:
            raise ValueError(self.training_refusal)

    def should_tile(self, name: str, need, shape, tile) -> bool:
        """Whether to tile an input larger than a tile: "on"/"off" as set; in "auto", if the untiled call would not fit.

        The one memory rule of every family: `need()` gives the device bytes of the untiled call, XLA's temp +
        argument + output bytes of its largest program (`memory.call_bytes`; docs/design/how_it_works.md argues it); it
        compiles programs, so only "auto" calls it.
        """
        if self._tiling != "auto":
            return self._tiling == "on"
        budget = self.memory_budget
        if budget is None:
            budget = memory.free_bytes(self.placement.local_device())
        if budget is None:
            return False
        with self.programs.probe():
            try:
                needed = need()
            except jax.errors.JaxRuntimeError as error:  # libtpu refuses to compile what cannot fit its HBM
                if "RESOURCE_EXHAUSTED" not in str(error):
                    raise
                needed = float("inf")
        if needed <= budget:
            return False
        if not self._tiling_logged:
            logger.warning(
                "TorchaxVAE: the untiled %s needs %.3g GB for input %s, more than the %.3g GB available; "
                "tiling it in %s tiles. enable_tiling()/disable_tiling() force the choice.",
                name, needed / 1e9, tuple(shape), budget / 1e9, "x".join(map(str, tile)),
            )
            self._tiling_logged = True
        return True

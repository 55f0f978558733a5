"""What a TorchaxVAE compiles ahead of a call, running nothing: `precompile`, `output_shape`, `lower` (StableHLO
for another backend), `plan` (compiled for an accelerator's abstract devices), and the twins the last two build.

A mixin of `torchax_vae.facade.vae.TorchaxVAE`; a twin is a TorchaxVAE of the same class and config on the meta device
with this one's settings, built for another platform or program cache instead of changing this one's.
"""

import contextvars
import dataclasses

from torchax_vae.engine import weights
from torchax_vae.engine.programs import LoweredOnly
from torchax_vae.plan import plan

# Set only while `_twin` constructs: the platform and program cache of the twin being built. A context variable, not
# an argument: the twin is built through diffusers' own `TorchaxVAE(vae)` signature (a ModelMixin's __init__, whose
# keywords diffusers' loaders and pipelines pass), which has no place for them.
_TWIN: contextvars.ContextVar = contextvars.ContextVar("torchax_vae_twin", default={})
# The settings every family has; each family declares its own (diffusers' tiling and batching attributes) in
# `Family.settings`, and `_twin` copies exactly those.
ENGINE_SETTINGS = ("tiling_mode", "use_slicing")


class AheadOfTime:
    """`precompile`, `output_shape`, `lower`, `plan` and `_twin` (the module doc)."""

    def precompile(self, kind: str, shape) -> list[dict]:
        """Compiles, without running anything, every program `encode` or `decode` needs for an input of `shape`.

        Follows the current tiling and slicing settings. Returns those programs'
        `compile_stats()` entries; later calls with that shape compile nothing.
        A pipeline that will decode at a known size can call this first, so that
        the first video does not pay the compilation (docs/results/performance.md, "The first call").

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
        """
        source = self._shape_source(kind, shape)
        with self._engine.programs.recording() as used:
            self._run_kind(kind, source)
        return [dataclasses.asdict(stats) for stats in used]

    def output_shape(self, kind: str, shape) -> tuple[int, ...]:
        """The shape `encode` (of the posterior's moments) or `decode` gives for an input of `shape`; compiles as `precompile`."""
        return tuple(self._run_kind(kind, self._shape_source(kind, shape)).shape)

    def lower(self, kind: str, shape, platform: str | None = None) -> dict[str, str]:
        """The StableHLO of every program `encode` or `decode` runs for an input of `shape`, lowered for `platform`.

        Traces and lowers without compiling or running, so a machine without that
        backend can check what it would get (tests/test_gpu_conv.py lowers every
        released size for "cuda" on a CPU). Follows the tiling and slicing
        settings, except that "auto" tiling lowers the untiled programs (its
        memory check needs a compilation). A model on the meta device works here.

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
            platform (`str`, *optional*): a JAX lowering platform ("cuda", "rocm", "tpu", "cpu");
                by default this TorchaxVAE's device's.
        Returns:
            program name -> StableHLO text, in first-use order.
        """
        programs = LoweredOnly(platform or self._engine.placement.platform)
        lowering = self._twin(self.mesh, platform=programs.platform, programs=programs)
        lowering._run_kind(kind, lowering._shape_source(kind, shape))
        return programs.texts

    def _twin(self, mesh, *, platform: str | None = None, programs=None, memory_budget: int | None = None):
        """A TorchaxVAE of this one's class and config on the meta device (no weights), on `mesh`, with this
        one's settings (tiling, slicing, frame batches, program split): what `lower` and `plan` trace and compile.

        platform: the JAX platform its programs are traced for (default: the mesh's, or this machine's);
        programs: the program cache it compiles into (`LoweredOnly`, `plan.PlannedPrograms`).
        """
        model = weights.rebuilt_on_meta(self.model_class, self.config).eval()
        token = _TWIN.set({"platform": platform, "programs": programs})
        try:
            twin = type(self)(model, dtype=self.dtype, mesh=mesh, memory_budget=memory_budget)
        finally:
            _TWIN.reset(token)
        for key in ENGINE_SETTINGS + self.family.settings:  # the user's settings, as the family declares them
            if hasattr(self, key):  # (AutoencoderKLTemporalDecoder has no use_slicing, as diffusers' class)
                setattr(twin, key, getattr(self, key))
        twin.compile_effort = self.compile_effort  # compiled as a run's would be (the twin's options follow)
        return twin

    def plan(self, kind: str, shape, target: str = "v6e-8", *, dp: int = 1, observer=None):
        """Compiles offline, for an accelerator this machine need not have, what `encode`/`decode` would run there.

        A twin of this TorchaxVAE (its config on the meta device, its settings) on a mesh of the target's
        abstract devices compiles the same programs a run there would; nothing runs. Returns a
        `torchax_vae.plan.Plan`: per program its runs per call, compile seconds, per-chip memory and FLOPs; per
        call the peak per chip against the chip's memory (`fits`), sharding efficiency and a roofline bound.
        Figures are compiled offline, never measured speed (docs/guide/plan.md).

        Args:
            kind (`str`): `"encode"` or `"decode"`.
            shape (`tuple[int, ...]`): the input's [batch, channels, frames, height, width].
            target (`str`): "v6e-8", "v5e-4", "v5p-8", "v4-8", a libtpu topology ("v6e:2x4"), "h100", "h100x8", "h200".
            dp (`int`): the mesh's 'dp' rows, a divisor of the target's device count.
            observer: called (program name, None) before and (name, stats) after each compile.
        """

        return plan(self, kind, shape, target, dp=dp, observer=observer)


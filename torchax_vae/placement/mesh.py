"""Where arrays live: one device, or a ('dp', 'tp') mesh with spatially sharded activations.

`make_mesh` builds the mesh from `jax.devices()` (all processes' devices after
`jax.distributed.initialize`). `sharding_for` is the sharding policy: how an
NCTHW activation is split over the mesh (torchax_vae/patches/sharding_marks.py puts it on
the model's activations while a program is traced). `Placement` answers, for
TorchaxVAE, where the weights go (replicated), where an input block goes
(split like the activations it feeds) and where small index vectors go.

The policy. The spatial split uses every device (both axes), or 'tp' when
the batch divides over 'dp' > 1. A program (one encoder or decoder call)
takes one height x width grid (a, b) of those devices, a splitting the
height and b the width (`program_grid`): the first of its levels, from the
latents up, that a grid of all of them divides, the squarest blocks first
(`plane_split`: the least halo), or on TPUs the fewest width splits first
(`keeps_width`). A 720-wide CogVideoX video on 8 devices has 60 x 90
latents: 4 x 2 everywhere. Inside a program, a level the grid does not
divide takes it in unequal blocks where each holds two or more rows
(`uneven_grid`: XLA pads the last), else the largest divisors of a and b
that divide it, on the same axes (logged once per shape and mesh):
1328 x 1328 Qwen-Image on 8 TPU chips has the grid 4 x 2 from its 332
level up, and its 166 x 166 latents take it in blocks of 42 rows (the last
40). Arrays that cross a program's boundary split evenly.
Every sharding is on `fine_mesh(mesh)`: the same devices in the same order,
each axis cut into its prime factors, where any such grid is a PartitionSpec.
docs/design/sharding.md argues the choices.
"""

import functools
import logging

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding
from torchax_vae.placement.backends import backend


__all__ = ["make_mesh"]

logger = logging.getLogger(__name__)

AXES = ("dp", "tp")
_LOGGED: set = set()


def make_mesh(devices=None, *, dp: int = 1) -> Mesh:
    """A ('dp', 'tp') mesh over `devices` (default: `jax.devices()`, every process's), `dp` rows of tp devices.

    Activations split their width over both axes, or, when the batch divides by
    dp > 1, their batch over 'dp' and their width over 'tp'. (The public `torchax_vae.make_mesh` is
    `process.make_mesh`: the process-wide changes first, then this.)
    """
    devices = list(jax.devices() if devices is None else devices)
    if not isinstance(dp, int) or dp < 1 or len(devices) % dp:
        raise ValueError(f"dp must be a positive divisor of the device count {len(devices)}, got {dp!r}")
    grid = np.array(devices, dtype=object).reshape(dp, len(devices) // dp)
    # Auto axes: XLA propagates shardings between our marks (Explicit ones would demand a spec everywhere).
    return Mesh(grid, AXES, axis_types=(AxisType.Auto,) * 2)


def check_mesh(mesh) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh (see torchax_vae.make_mesh), got {type(mesh).__name__}")
    if tuple(mesh.axis_names) != AXES:
        raise ValueError(f"mesh axes must be {AXES}, got {tuple(mesh.axis_names)}")
    if any(t != AxisType.Auto for t in mesh.axis_types):
        raise ValueError(
            f"mesh axes must be AxisType.Auto (jax.make_mesh makes Explicit ones by default), got {mesh.axis_types}"
        )
    return mesh


def _size(mesh: Mesh, axes) -> int:
    if axes is None:
        return 1
    names = axes if isinstance(axes, tuple) else (axes,)
    size = 1
    for name in names:
        size *= mesh.shape[name]
    return size


def _primes(n: int) -> list[int]:
    factors, p = [], 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors


@functools.lru_cache(maxsize=64)
def fine_mesh(mesh: Mesh) -> Mesh:
    """`mesh`'s devices in the same order, each axis split into its prime factors ('dp0', ..., 'tp0', 'tp1', ...).

    Every sharding TorchaxVAE makes is on this mesh: a height x width grid of any factors of an axis group is a
    PartitionSpec here, and one mesh for all of a program's arrays lets JAX name its outputs' shardings.
    """
    dims, names = [], []
    for axis in AXES:
        for i, p in enumerate(_primes(mesh.shape[axis]) or [1]):
            dims.append(p)
            names.append(f"{axis}{i}")
    return Mesh(mesh.devices.reshape(dims), tuple(names), axis_types=(AxisType.Auto,) * len(dims))


def _fine_axes(fine: Mesh, axes) -> tuple[str, ...]:
    """The fine mesh's (prime-sized) axes that make up `axes` ('dp', 'tp', ('dp', 'tp') or None) of the user's mesh."""
    if axes is None:
        return ()
    wanted = axes if isinstance(axes, tuple) else (axes,)
    return tuple(name for name in fine.axis_names if name.rstrip("0123456789") in wanted and fine.shape[name] > 1)


def _spec_axes(names) -> str | tuple | None:
    names = tuple(names)
    return None if not names else names[0] if len(names) == 1 else names


def _take(axes, fine: Mesh, product: int) -> tuple[str, ...]:
    """The first of `axes` (prime-sized) whose sizes multiply to `product` (a divisor of theirs)."""
    chosen = []
    for name in axes:
        if product > 1 and product % fine.shape[name] == 0:
            chosen.append(name)
            product //= fine.shape[name]
    return tuple(chosen)


def _largest_divisor(n: int, extent: int) -> int:
    """The largest divisor of n that divides extent."""
    return max(d for d in range(1, n + 1) if n % d == 0 and extent % d == 0)


def _at_least_two(n: int, extent: int) -> int:
    """The largest divisor of n (which divides extent) whose blocks hold two or more elements of extent.

    XLA's SPMD partitioner (jax 0.10.2; it runs before any backend's code generation) computes a convolution
    wrongly when its input comes through a reshape (a frame axis added or dropped), its height x width is
    split both ways and an axis of two devices holds one element per device: a 2 x 4 level split 2 x 4, max
    |Δ| 42 against the same program on one device. Wan 2.2's tiny encoder on 8 devices met it. `tests/_sharded_worker.py xla` watches for the bug; docs/limits.md has the table.
    """
    return max(d for d in range(1, n + 1) if n % d == 0 and extent // d >= 2) if extent >= 2 else 1


def _batch_and_group(mesh: Mesh, batch: int):
    """The batch's axis ('dp' where it divides, dp > 1) and the axes (and their size) the spatial split uses."""
    batch_axis = "dp" if mesh.shape["dp"] > 1 and batch % mesh.shape["dp"] == 0 else None
    group = "tp" if batch_axis else AXES
    return batch_axis, group, _size(mesh, group)


def plane_split(height: int, width: int, devices: int, whole_width: bool = False) -> tuple[int, int]:
    """(a, b): a divides height, b width, a * b divides `devices`; the most devices, then the squarest blocks
    (the least halo per block: a / height + b / width), then the widest b. whole_width: the fewest width
    splits before the squarest blocks (TPUs: `keeps_width`).

    Squarer blocks exchange smaller halos: compiled for v6e-8 with width splits first, Wan 2.1 720p's 90 x 160
    latents as 2 x 4 blocks reached a sharding efficiency of 0.96 against 0.92 as 1 x 8 strips (Wan 2.2 0.93
    against 0.89, Qwen-Image 2.1 0.92 against 0.86).
    """
    def key(g):
        return (g[0] * g[1], -g[1] if whole_width else 0, -(g[0] / height + g[1] / width), g[1])

    best = (1, 1)
    for b in range(1, devices + 1):
        for a in range(1, devices // b + 1):
            if devices % (a * b) == 0 and height % a == 0 and width % b == 0:
                best = max(best, (a, b), key=key)
    return best


def keeps_width(mesh: Mesh) -> bool:
    """Whether a program on `mesh` splits the height before the width: on TPUs.

    libtpu's convolutions fold a block's width into 8 groups of ceil((width + halo) / 8) positions (the 8
    sublanes of a vector register, seen in the compiled HLO as `f01b2` convolutions), so a block 24 wide
    computes 32 columns and a block 96 wide 104. Compiled for v6e-8, taking height splits first raised the
    sharding efficiency of every size it changed: LTX-2's encode 0.85 -> 0.99 and decode 0.93 -> 1.00 (8 x 1
    against 2 x 4), Qwen-Image 2.1's decode 0.92 -> 1.00, Wan 2.2's 0.93 -> 0.97 and Wan 2.1 480p's
    0.95 -> 0.98 (4 x 2). GPUs and CPUs keep the squarest blocks (the least halo).
    """

    return backend(mesh.devices.flat[0].platform).height_splits_first


def program_grid(mesh: Mesh | None, batch: int, height: int, width: int,
                 rows_only: bool = False) -> tuple[int, int] | None:
    """The (a, b) height x width grid of a program whose smallest level (its latents) is height x width.

    rows_only: split the height alone (b = 1), for a family whose layers fold the width into the batch
    (VidTok's temporal blocks run on [B * H * W, C, T]: only a height split keeps a contiguous block of that).

    The first level (the smallest, then twice, four and eight times its size: the decoder's and encoder's
    levels) that some grid of all the group's devices divides gives it; every larger level is a multiple,
    so the grid divides it too, and the smaller ones take divisors of it (`sharding_for`). One grid for the
    whole program means no reshard between levels but gathers and slices along single axes (from a width
    split to a grid, XLA replicates the tensor at the reshape between them).
    """
    if mesh is None:
        return None
    _, _, size = _batch_and_group(mesh, batch)
    grid, whole_width = (1, 1), keeps_width(mesh)
    for k in range(4):
        grid = plane_split(height << k, 1 if rows_only else width << k, size, whole_width)
        if grid[0] * grid[1] == size:
            break
    return grid


def level_grid(grid: tuple[int, int], height: int, width: int) -> tuple[int, int]:
    """The split of a height x width level under a program's grid: the largest divisors of its rows and columns
    that divide the level, with no one-element blocks where both axes split (`_at_least_two`)."""
    a, b = _largest_divisor(grid[0], height), _largest_divisor(grid[1], width)
    if a > 1 and b > 1:
        a, b = _at_least_two(a, height), _at_least_two(b, width)
    return a, b


def _uneven(n: int, extent: int) -> bool:
    """Whether `extent` splits into n blocks of ceil(extent / n) (the last one shorter) of two or more elements."""
    block = -(-extent // n)
    return n > 1 and block >= 2 and block * (n - 1) < extent


def uneven_grid(grid: tuple[int, int], height: int, width: int) -> tuple[int, int]:
    """The split of a level inside a program, where XLA may pad a shard: the grid's own a (b) where the level's
    height (width) splits unevenly into a (b) blocks of two or more rows, else `level_grid`'s divisor.

    Qwen-Image's 1328 x 1328 on 8 devices: the 166 x 166 latents take 2 x 4 blocks of 83 x 42 (the last 40 wide,
    XLA pads it to 42) instead of 2 x 2, and the encoder's last level and mid block use all 8 devices.
    """
    even = level_grid(grid, height, width)
    a = grid[0] if even[0] < grid[0] and _uneven(grid[0], height) else even[0]
    b = grid[1] if even[1] < grid[1] and _uneven(grid[1], width) else even[1]
    if a > 1 and b > 1 and min(-(-height // a), -(-width // b)) < 2:  # one-element blocks (`_at_least_two`)
        return even
    return a, b


def sharding_for(mesh: Mesh, shape, grid: tuple[int, int] | None = None, *, uneven: bool = False) -> NamedSharding:
    """Where an NCTHW activation of `shape` lives on `mesh` (the module docstring's policy), on `fine_mesh(mesh)`.

    grid: the program's height x width grid (`program_grid`); by default this shape's own. The shape takes the
    largest divisors of its rows and columns that divide its height and width, on the same axes.
    uneven: inside a program (the layer marks), take the grid's whole split where blocks of unequal size will do
    (`uneven_grid`). Arrays that cross a program's boundary stay even: `jax.device_put` takes only even splits,
    and JAX gives an unevenly split output of a program back whole on every device.
    """
    fine = fine_mesh(mesh)
    batch, height, width = shape[0], shape[-2], shape[-1]
    batch_axis, group, size = _batch_and_group(mesh, batch)
    if grid is None:
        grid = program_grid(mesh, batch, height, width)
    a, b = (uneven_grid if uneven else level_grid)(grid, height, width)
    axes = _fine_axes(fine, group)
    rows = _take(axes, fine, grid[0])
    cols = _take([name for name in axes if name not in rows], fine, grid[1])
    if uneven and a * b < size:  # logged for the layers' split (what the program computes on)
        key = (tuple(shape[-2:]), batch_axis, tuple(mesh.shape.items()))
        if key not in _LOGGED:
            _LOGGED.add(key)
            logger.warning("TorchaxVAE: height x width %dx%d splits only %d x %d of the %d devices of mesh %s there.",
                           height, width, a, b, size, dict(mesh.shape))
    lead = [_spec_axes(_fine_axes(fine, batch_axis))] + [None] * (len(shape) - 3)
    return NamedSharding(fine, PartitionSpec(*lead, _spec_axes(_take(rows, fine, a)), _spec_axes(_take(cols, fine, b))))


def attention_axes(mesh: Mesh, batch: int) -> tuple:
    """(batch axes, token axes, shards) of `fine_mesh(mesh)` for a [batch, heads, tokens, dim] attention query.

    The batch goes over 'dp' where the activations' does (`_batch_and_group`), the tokens over all the
    spatial group's devices (`shards` of them; the caller pads the tokens to a multiple:
    torchax_vae/patches/attention_split.py).
    """
    fine = fine_mesh(mesh)
    batch_axis, group, size = _batch_and_group(mesh, batch)
    return _spec_axes(_fine_axes(fine, batch_axis)), _spec_axes(_fine_axes(fine, group)), size


class Placement:
    """Shardings for TorchaxVAE's arrays on one device (mesh None) or on a mesh."""

    def __init__(self, mesh: Mesh | None, device=None, platform: str | None = None, rows_only: bool = False):
        self.mesh = mesh
        self.rows_only = rows_only  # the family's programs split the height alone (`program_grid`)
        if mesh is None:
            self.replicated = SingleDeviceSharding(device or jax.devices()[0])
        else:
            self.replicated = NamedSharding(fine_mesh(mesh), PartitionSpec())
        # the JAX platform programs are traced for: the devices', or another one's (TorchaxVAE.lower)
        self.platform = platform or self.local_device().platform

    def activation(self, shape):
        """Where an NCTHW block of `shape` goes: split like the marked activations inside the programs."""
        if self.mesh is None:
            return self.replicated
        if len(shape) == 3:  # audio [B, C, T]: the batch over 'dp' where it divides; each device holds whole clips
            fine = fine_mesh(self.mesh)
            batch_axis = _batch_and_group(self.mesh, shape[0])[0]
            return NamedSharding(fine, PartitionSpec(_spec_axes(_fine_axes(fine, batch_axis)), None, None))
        return sharding_for(self.mesh, shape, self.grid(shape[0], shape[-2], shape[-1]))

    def grid(self, batch: int, height: int, width: int) -> tuple[int, int] | None:
        """The height x width grid (`program_grid`) of a program whose latents are batch x height x width."""
        return program_grid(self.mesh, batch, height, width, self.rows_only)

    def local_device(self):
        """A device of this process (for memory queries)."""
        return next(iter(self.replicated.addressable_devices))

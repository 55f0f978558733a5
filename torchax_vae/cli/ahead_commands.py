"""The commands that compile ahead and run nothing: `torchax-vae warmup` (into the persistent cache, for this
machine) and `torchax-vae plan` (for an accelerator's abstract devices, on any machine), and the size checks
both make before anything compiles."""

import json
import pathlib
import sys

from torchax_vae import cache
from torchax_vae.cli.commands import _make_vae
from torchax_vae.cli.frame_progress import precompile_counting as _precompile
from torchax_vae.engine.stored import code_digest, model_digest
from torchax_vae.facade.vae import TorchaxVAE
from torchax_vae.media import files
from torchax_vae.media.files import InputError
from torchax_vae.plan import Plan, plan as make_plan, ProgramPlan
from torchax_vae.plan.targets import target as parse_target, TargetError
from torchax_vae.stage3.loading import _cached_snapshot, load_meta, load_vae, summary


def warmup(model: str, shape, *, subfolder: str | None = "vae", dtype: str = "fp32", tiling: bool = False,
           kinds=("decode",), batch: int = 1) -> dict:
    """Compiles (into the persistent cache) what decoding or encoding videos of shape (frames, height, width) needs."""
    vae = load_vae(model, subfolder)
    ours = _make_vae(vae, dtype, tiling)
    shapes = {kind: video_input_shape(ours, kind, shape, batch) for kind in kinds}
    result = {}
    for kind, input_shape in shapes.items():
        seconds, _, stats = _precompile(ours, kind, input_shape)
        result[kind] = {"input_shape": list(input_shape), "programs": len(stats), "seconds": seconds}
    return result


def video_input_shape(ours: TorchaxVAE, kind: str, shape, batch: int = 1) -> tuple[int, ...]:
    """The encode or decode input for `batch` videos of `shape` (frames, height, width): InputError, before anything
    compiles, for a size the VAE cannot give or take (what `warmup` and `plan` both refuse)."""
    frames, height, width = shape
    spatial = ours.spatial_compression_ratio
    what = f"--shape {frames},{height},{width}"
    if ours.rank == 3:
        raise InputError(f"{what}: this {ours.model_class.__name__} takes sound, not video: plan it with --shape "
                         "B,C,T (torchax-vae plan)")
    if height % spatial or width % spatial:
        raise InputError(f"{what}: height and width must be multiples of {spatial} (this "
                         f"{ours.model_class.__name__}'s spatial compression), got {height}x{width}")
    if ours.rank == 4:  # an image VAE: one frame, images [B, C, H, W]; SVD's frames are its decode's batch
        if frames != 1 and not (ours.batch_is_frames and kind == "decode"):
            raise InputError(f"{what}: this {ours.model_class.__name__} encodes{' and decodes' * (not ours.batch_is_frames)} "
                             f"images: one frame (--shape 1,{height},{width})")
        images = (batch * frames, ours.video_channels, height, width)
        return _checked(ours, kind, ours.latent_shape(images) if kind == "decode" else images, what)
    video_shape = (batch, ours.video_channels, frames, height, width)
    latents = ours.latent_shape(video_shape)
    if kind == "decode" and frames > 1 and latents == ours.latent_shape((*video_shape[:2], frames - 1, height, width)):
        fewer = next(f for f in range(frames - 1, 0, -1)
                     if ours.latent_shape((*video_shape[:2], f - 1, height, width)) != latents)
        raise InputError(f"{what}: a decode makes no {frames}-frame video; its {latents[2]} latent frames decode to "
                         f"{fewer} frames (this {ours.model_class.__name__}'s temporal compression): use {fewer}")
    return _checked(ours, kind, latents if kind == "decode" else video_shape, what)


def _audio_shape(ours: TorchaxVAE, shape) -> tuple[int, ...]:
    if len(shape) != 3:
        raise InputError(f"--shape {','.join(map(str, shape))}: this {ours.model_class.__name__} takes waveforms or "
                         "latents [B, C, T]: give B,C,T (e.g. 1,64,1024 for latents)")
    return tuple(shape)


def _checked(ours: TorchaxVAE, kind: str, input_shape, what: str) -> tuple[int, ...]:
    try:  # the family's own checks
        ours._shape_source(kind, input_shape)
    except ValueError as e:
        raise InputError(f"{what}: {e}") from None
    return input_shape


def plan(model: str, shape, *, target: str, kind: str = "decode", subfolder: str | None = "vae", dtype: str = "bf16",
         tiling: bool = False, dp: int = 1, progress: bool = True, verbose: bool = False) -> dict:
    """Compiles offline for `target` what a run would (torchax_vae.plan); the plan as a dict.

    model: a config.json, a VAE or pipeline folder, or a hub id (its cached config): read on the meta device.
    shape: the input (batch, channels, frames, height, width), or a video's (frames, height, width).
    A plan is stored in the cache folder (plans/), keyed by the code, the model's config, the shape, target and
    settings: the same plan again is read back, not compiled.
    """

    try:
        chosen = parse_target(target)
    except TargetError as e:
        raise InputError(str(e)) from None
    local = pathlib.Path(model).expanduser()
    source = local if local.exists() else _cached_snapshot(model, subfolder)
    try:
        meta = load_meta(source, subfolder)
    except Exception as e:
        raise InputError(f"cannot read a VAE config from {model}: {summary(e)}") from e
    folder = cache.store_only(cache.resolve())  # the program store, not JAX's cache: these devices are abstract
    # a plan made before, read back before any compiler loads (only plans of accepted shapes are stored, keyed by
    # the shape as given)
    stored = None if folder is None else _plan_path(folder, meta, kind, shape, chosen.name, dp, dtype, tiling)
    if stored is not None and stored.is_file():
        try:
            data = json.loads(stored.read_text())
            result = Plan(**{**data, "programs": [ProgramPlan(**p) for p in data["programs"]]})
            return result.to_json() | {"summary": result.summary(verbose), "stored": True}
        except (OSError, ValueError, TypeError, KeyError):
            pass  # an unreadable or older entry: plan again and replace it
    try:
        devices = chosen.devices()  # a missing compiler or a refused topology, before anything compiles
    except TargetError as e:
        raise InputError(str(e)) from None
    if len(devices) % dp:
        raise InputError(f"--dp {dp} does not divide the {len(devices)} devices of {chosen.name}")
    ours = _make_vae(meta, dtype, tiling)
    what = f"--shape {','.join(map(str, shape))}"
    if ours.rank == 3:  # an audio VAE: its input as it is, B,C,T
        shape = _checked(ours, kind, _audio_shape(ours, shape), what)
    elif len(shape) == 4:  # [B, C, H, W] as it is: images', LTX-2's spectrograms (its audio VAE's, its vocoders')
        if ours.rank != 4:
            raise InputError(f"{what}: this {ours.model_class.__name__} takes videos [B, C, F, H, W]: give "
                             "B,C,F,H,W or FRAMES,HEIGHT,WIDTH")
        shape = _checked(ours, kind, tuple(shape), what)
    elif len(shape) == 3:
        shape = video_input_shape(ours, kind, shape)
    count = 0

    def observer(name, stats):
        nonlocal count
        if stats is None:
            count += 1
            print(f"[{count}] {name}: compiling for {chosen.name} ...", file=sys.stderr, flush=True)
        else:
            print(f"[{count}] {name}: {stats.compile_seconds:.1f} s, temp {stats.temp_bytes / 2**30:.2f} GiB "
                  "per device", file=sys.stderr, flush=True)

    try:
        result = make_plan(ours, kind, tuple(shape), chosen, dp=dp, observer=observer if progress else None)
    except (TargetError, ValueError) as e:
        raise InputError(summary(e)) from e
    if stored is not None:
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            with files.atomic_output(stored) as partial:
                partial.write_text(json.dumps(result.to_json()))
        except (OSError, files.WriteError) as error:
            print(f"torchax-vae plan: cannot store the plan in {stored.parent} ({error})", file=sys.stderr)
    return result.to_json() | {"summary": result.summary(verbose), "stored": False}


def _plan_path(folder: pathlib.Path, meta, kind, shape, target: str, dp: int, dtype: str, tiling: bool) -> pathlib.Path:
    """Where the plan of this model, call and target is kept: keyed by everything that changes it."""
    import hashlib

    key = json.dumps([code_digest(), model_digest(meta), kind, list(shape), target, dp, dtype, tiling])
    return folder / "plans" / (hashlib.sha256(key.encode()).hexdigest() + ".json")

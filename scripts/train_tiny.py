"""Train the tiny CogVideoX-architecture VAE that `torchax-vae demo` ships, through torchax.

The model is diffusers' AutoencoderKLCogVideoX, unmodified, at a small width
(0.87 M parameters, 3.5 MB fp32). Gradients flow through the same lowering
TorchaxVAE runs (`torchax_vae.engine.lowering`): `jax.value_and_grad` of the VAE loss
over the weights. Data are procedural moving-shape clips
(`torchax_vae.media.synthetic`), a fresh batch per step from (seed, step), so a run
is reproducible from its seed. Adam with warm-up and cosine decay, written out
below (a dozen lines; no optimizer dependency for one script).

    python scripts/train_tiny.py --workdir /tmp/tiny-train            # 6000 steps, ~50 min on 2 cores
    python scripts/train_tiny.py --workdir /tmp/tiny-train --export   # weights -> package

It checkpoints every --checkpoint-every steps and resumes from the workdir, so
it can be stopped and restarted. `log.jsonl` there holds the loss and the
validation PSNR curve.
"""

import argparse
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch
from diffusers import AutoencoderKLCogVideoX

from torchax_vae.engine.lowering import jax_weights
from torchax_vae.models import cogvideox
from torchax_vae.models.cogvideox import LoweredVAE
from torchax_vae.media.synthetic import moving_shapes

# Also written into the exported config.json; the demo reads it from there.
TINY_CONFIG = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ["CogVideoXDownBlock3D"] * 4,
    "up_block_types": ["CogVideoXUpBlock3D"] * 4,
    "block_out_channels": [16, 32, 32, 32],
    "latent_channels": 16,
    "layers_per_block": 1,
    "norm_num_groups": 8,
    "temporal_compression_ratio": 4,
}
ASSET = pathlib.Path(__file__).resolve().parent.parent / "torchax_vae" / "assets" / "tiny_vae"


def build_model(seed: int) -> AutoencoderKLCogVideoX:
    torch.manual_seed(seed)
    return AutoencoderKLCogVideoX(**TINY_CONFIG).eval()


def make_loss(lowered: LoweredVAE, kl_weight: float):
    def loss(weights, x, eps, noise):
        moments, _ = lowered.encode_step(weights, x, None)
        mean, logvar = jnp.split(moments, 2, axis=1)
        logvar = jnp.clip(logvar, -30.0, 20.0)  # as diffusers' DiagonalGaussianDistribution
        z = mean + noise * jnp.exp(0.5 * logvar) * eps
        y, _ = lowered.decode_step(weights, z, None)
        mse = jnp.mean((y - x) ** 2)
        kl = 0.5 * jnp.mean(mean**2 + jnp.exp(logvar) - 1.0 - logvar)
        return mse + kl_weight * kl, (mse, kl)

    return loss


def make_reconstruct(lowered: LoweredVAE):
    def reconstruct(weights, x):  # decode of the posterior mean, as the demo does
        moments, _ = lowered.encode_step(weights, x, None)
        mean, _ = jnp.split(moments, 2, axis=1)
        return lowered.decode_step(weights, mean, None)[0]

    return reconstruct


def psnr(x, y) -> float:
    """dB for signals in [-1, 1] (peak-to-peak 2)."""
    mse = float(np.mean((np.clip(np.asarray(y), -1, 1) - np.asarray(x)) ** 2))
    return 10 * math.log10(4.0 / max(mse, 1e-12))


def learning_rate(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + (args.lr - args.min_lr) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def noise_scale(step: int, args) -> float:
    """The posterior noise is ramped in: decoding the mean first learns far faster (sampling from the
    start stalled near 12 dB for 250 steps), and the ramp then drives logvar down so that
    `latent_dist.sample()` decodes as well as the mean."""
    start, end = args.noise_ramp
    return args.noise * min(1.0, max(0.0, (step - start) / (end - start)))


def make_update(loss_fn, clip_norm: float, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step with global-norm gradient clipping, jitted; lr and step are traced."""

    @jax.jit
    def update(weights, m, v, step, lr, x, normal, noise):
        (loss, (mse, kl)), grads = jax.value_and_grad(loss_fn, has_aux=True)(weights, x, normal, noise)
        norm = jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads)))
        grads = jax.tree.map(lambda g: g * jnp.minimum(1.0, clip_norm / (norm + 1e-12)), grads)
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        t = step + 1.0
        weights = jax.tree.map(
            lambda w, m, v: w - lr * (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps), weights, m, v
        )
        return weights, m, v, loss, mse, kl, norm

    return update


def _flatten(tree) -> dict[str, np.ndarray]:
    return {f"{child}/{name}": np.asarray(a) for child, d in tree.items() for name, a in d.items()}


def _unflatten(flat: dict[str, np.ndarray]) -> dict:
    tree: dict = {}
    for key, a in flat.items():
        child, _, name = key.partition("/")
        tree.setdefault(child, {})[name] = jnp.asarray(a)
    return tree


def save_checkpoint(workdir: pathlib.Path, step: int, weights, m, v) -> None:
    arrays = {f"w:{k}": a for k, a in _flatten(weights).items()}
    arrays |= {f"m:{k}": a for k, a in _flatten(m).items()}
    arrays |= {f"v:{k}": a for k, a in _flatten(v).items()}
    arrays["step"] = np.asarray(step)
    fd, tmp = tempfile.mkstemp(dir=workdir, suffix=".npz.tmp")
    with os.fdopen(fd, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, workdir / "checkpoint.npz")


def load_checkpoint(workdir: pathlib.Path):
    path = workdir / "checkpoint.npz"
    if not path.exists():
        return None
    with np.load(path) as data:
        parts = {p: _unflatten({k[2:]: data[k] for k in data.files if k.startswith(p + ":")}) for p in "wmv"}
        return int(data["step"]), parts["w"], parts["m"], parts["v"]


def export(workdir: pathlib.Path, seed: int, target: pathlib.Path = ASSET) -> pathlib.Path:
    """Writes the checkpoint's weights as a diffusers model folder (config.json + safetensors), atomically."""
    state = load_checkpoint(workdir)
    if state is None:
        sys.exit(f"error: no checkpoint in {workdir}")
    model = build_model(seed)
    flat = {k.replace("/", "."): torch.from_numpy(np.array(a)) for k, a in _flatten(state[1]).items()}
    missing, unexpected = model.load_state_dict(flat, strict=False)
    if missing or unexpected:
        sys.exit(f"error: checkpoint does not fit the model: missing {missing}, unexpected {unexpected}")
    # The pipelines multiply latents by scaling_factor: give them unit variance, as
    # the released VAEs do, measured on clips the training never saw.
    with torch.no_grad():
        clips = torch.from_numpy(moving_shapes(2 * 10**9 + seed, 8, 9, 64, 64))
        std = model.encode(clips).latent_dist.mean.std().item()
    model.register_to_config(scaling_factor=round(1.0 / std, 6))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(dir=target.parent, prefix=".tiny_vae."))
    model.save_pretrained(tmp, safe_serialization=True)
    shutil.copy(workdir / "log.jsonl", tmp / "training_log.jsonl")
    for path in (tmp, *tmp.iterdir()):  # mkdtemp makes 0700; a package file must be readable by all
        path.chmod(0o755 if path.is_dir() else 0o644)
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    return target


def train(args) -> None:
    workdir = pathlib.Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model = build_model(args.seed)
    lowered = LoweredVAE(model)
    state = load_checkpoint(workdir)
    if state is None:
        start, weights = 0, jax_weights(model, jnp.float32)
        m = jax.tree.map(jnp.zeros_like, weights)
        v = jax.tree.map(jnp.zeros_like, weights)
    else:
        start, weights, m, v = state
        print(f"resuming at step {start}", flush=True)
    update = make_update(make_loss(lowered, args.kl_weight), args.clip)
    reconstruct = jax.jit(make_reconstruct(lowered))
    val = jnp.asarray(moving_shapes(10**9 + args.seed, 4, args.frames, args.size, args.size))
    latent_shape = cogvideox.latent_shape(model.config, (args.batch, 3, args.frames, args.size, args.size))
    log_path = workdir / "log.jsonl"
    kept = [line for line in log_path.read_text().splitlines() if json.loads(line)["step"] <= start] if start else []
    log_path.write_text("".join(line + "\n" for line in kept))  # drop what came after the checkpoint
    earlier = json.loads(kept[-1])["seconds"] if kept else 0.0
    began = time.time() - earlier  # "seconds" in the log is training time over all runs
    with open(workdir / "log.jsonl", "a") as log:
        for step in range(start, args.steps):
            x = jnp.asarray(moving_shapes(args.seed * 10**6 + step, args.batch, args.frames, args.size, args.size))
            normal = jax.random.normal(jax.random.key(args.seed * 10**6 + step), latent_shape)
            lr = learning_rate(step, args)
            noise = noise_scale(step, args)
            weights, m, v, loss, mse, kl, norm = update(weights, m, v, step, lr, x, normal, noise)
            done = step + 1
            if done % args.eval_every == 0 or done == args.steps:
                record = {
                    "step": done,
                    "seconds": round(time.time() - began, 1),
                    "lr": lr,
                    "noise": noise,
                    "loss": float(loss),
                    "mse": float(mse),
                    "kl": float(kl),
                    "grad_norm": float(norm),
                    "val_psnr": round(psnr(val, reconstruct(weights, val)), 3),
                }
                log.write(json.dumps(record) + "\n")
                log.flush()
                print(json.dumps(record), flush=True)
            if done % args.checkpoint_every == 0 or done == args.steps:
                save_checkpoint(workdir, done, weights, m, v)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", required=True, help="checkpoint and log folder (resumed if present)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--frames", type=int, default=9)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=2e-5)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--kl-weight", type=float, default=1e-5)
    p.add_argument("--noise", type=float, default=1.0, help="final scale of the posterior sample's noise")
    p.add_argument("--noise-ramp", type=lambda s: tuple(int(n) for n in s.split(",")), default=(2000, 4000),
                   metavar="START,END", help="steps over which the noise goes from 0 to --noise")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--export", action="store_true", help=f"write the checkpoint's weights to {ASSET}")
    args = p.parse_args(argv)
    if (args.frames - 1) % 4 or args.size % 8:
        p.error(f"--frames must be 4k+1 and --size a multiple of 8 (the VAE's compression), got {args.frames}, {args.size}")
    if args.export:
        print(export(pathlib.Path(args.workdir), args.seed))
    else:
        train(args)


if __name__ == "__main__":
    main()

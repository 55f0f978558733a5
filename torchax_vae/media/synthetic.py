"""Procedural test clips: soft-edged shapes moving over a colour gradient, reproducible from a seed.

The tiny demo VAE is trained on these (scripts/train_tiny.py) and `torchax-vae
demo` reconstructs one, so nothing has to be downloaded.
"""

import numpy as np

__all__ = ["moving_shapes"]


def _smoothstep(d: np.ndarray, width: float) -> np.ndarray:
    """1 inside (d < 0), 0 outside, with a linear ramp `width` pixels wide: antialiased edges."""
    return np.clip(0.5 - d / width, 0.0, 1.0)


def moving_shapes(seed: int, batch: int, frames: int, height: int, width: int, shapes: tuple[int, int] = (2, 4)) -> np.ndarray:
    """float32 [batch, 3, frames, height, width] in [-1, 1], the layout diffusers' VAE takes.

    Each clip: a linear colour gradient background and `shapes` (min, max) discs and
    rectangles, each with its own colour, size and constant velocity (they may leave
    the frame). Sizes and speeds scale with the frame, so any resolution looks alike.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(frames, dtype=np.float32)[:, None, None]
    y = np.arange(height, dtype=np.float32)[None, :, None]
    x = np.arange(width, dtype=np.float32)[None, None, :]
    scale = float(min(height, width))
    edge = max(1.0, scale / 32)
    out = np.empty((batch, 3, frames, height, width), np.float32)
    for b in range(batch):
        c0, c1 = rng.uniform(-1, 1, (2, 3, 1, 1, 1)).astype(np.float32)
        angle = rng.uniform(0, 2 * np.pi)
        ramp = np.cos(angle) * x / width + np.sin(angle) * y / height
        ramp = (ramp - ramp.min()) / (ramp.max() - ramp.min())  # 0..1 across the frame
        video = np.broadcast_to(c0 + (c1 - c0) * ramp[None], (3, frames, height, width)).copy()
        for _ in range(rng.integers(shapes[0], shapes[1] + 1)):
            colour = rng.uniform(-1, 1, (3, 1, 1, 1)).astype(np.float32)
            cy, cx = rng.uniform(0.15, 0.85, 2) * (height, width)
            vy, vx = rng.uniform(-0.04, 0.04, 2) * scale
            py, px = cy + vy * t, cx + vx * t  # [frames, 1, 1]
            if rng.random() < 0.5:
                r = rng.uniform(0.08, 0.25) * scale
                d = np.sqrt((y - py) ** 2 + (x - px) ** 2) - r
            else:
                hy, hx = rng.uniform(0.06, 0.2, 2) * scale
                d = np.maximum(np.abs(y - py) - hy, np.abs(x - px) - hx)
            alpha = _smoothstep(d, edge)[None]
            video = video * (1 - alpha) + colour * alpha
        out[b] = video
    return out

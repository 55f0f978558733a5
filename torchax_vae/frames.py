"""Frame batching, exactly as diffusers' AutoencoderKLCogVideoX._encode/_decode slice time.

GroupNorm statistics span the frames of one call, so the grouping of frames
into calls changes the result: it must match diffusers', not merely be causal.
The first batch takes the remainder (num_frames % batch_size) on top of a full
batch; the rest are full batches that continue from the carried conv_cache.
"""


def frame_batches(num_frames: int, batch_size: int) -> list[tuple[int, int]]:
    """The (start, end) frame ranges diffusers passes to one encoder/decoder call each."""
    num_batches = max(num_frames // batch_size, 1)
    remaining = num_frames % batch_size
    ranges = []
    for i in range(num_batches):
        start = batch_size * i + (0 if i == 0 else remaining)
        end = min(batch_size * (i + 1) + remaining, num_frames)
        ranges.append((start, end))
    return ranges

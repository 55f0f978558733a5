"""SD inpainting's stage 3 with its asymmetric VAE: `AsymmetricAutoencoderKL`'s decoder conditioned on the image and
mask the pipeline inpainted, read from files and preprocessed as StableDiffusionInpaintPipeline does.

The pipeline decodes `vae.decode(latents / scaling_factor, image=init_image, mask=mask_condition)` where
`init_image` is its `image_processor.preprocess(image, height, width)` ([-1, 1], [B, 3, H, W]) and
`mask_condition` its `mask_processor.preprocess(mask_image, height, width)` (grayscale, binarized at 0.5, [B, 1, H,
W]), both at the latents' size times the VAE's scale factor (`2 ** (len(block_out_channels) - 1)`). The command
(`torchax-vae decode --image FILE --mask FILE`) reads the files with PIL, as a user hands them to the pipeline, and
runs diffusers' own `VaeImageProcessor` on them; one image and mask condition every latent of the batch.
"""

import pathlib

from torchax_vae.media.files import InputError

__all__ = ["check", "condition"]

CONDITIONED = "AsymmetricAutoencoderKL"


def check(ours, image, mask) -> None:
    """InputError unless the files are none, or both for a VAE whose decoder takes them."""
    if image is None and mask is None:
        return
    name = ours.model_class.__name__
    if name != CONDITIONED:
        raise InputError(f"--image and --mask condition the decoder of SD inpainting's asymmetric VAE ({CONDITIONED}); "
                         f"this {name}'s decoder takes neither")
    if image is None or mask is None:
        raise InputError(f"--image and --mask go together: the {CONDITIONED} decoder is conditioned on both (give "
                         "neither to decode unconditioned)")


def condition(ours, image, mask, latent_shape) -> dict | None:
    """{"image": ..., "mask": ...} for decoding latents of `latent_shape` [B, C, h, w] with `ours`, or None without
    files; InputError, before anything compiles, for files that cannot be, or a VAE whose decoder takes neither."""
    check(ours, image, mask)
    if image is None:
        return None
    from diffusers.image_processor import VaeImageProcessor

    scale = ours.spatial_compression_ratio  # the pipeline's vae_scale_factor
    height, width = latent_shape[2] * scale, latent_shape[3] * scale
    images = VaeImageProcessor(vae_scale_factor=scale)
    masks = VaeImageProcessor(vae_scale_factor=scale, do_normalize=False, do_binarize=True, do_convert_grayscale=True)
    batch = latent_shape[0]
    image = images.preprocess(_read(image, "--image"), height=height, width=width)
    mask = masks.preprocess(_read(mask, "--mask"), height=height, width=width)
    return {"image": image.expand(batch, *image.shape[1:]).contiguous(),
            "mask": mask.expand(batch, *mask.shape[1:]).contiguous()}


def _read(path, flag: str):
    """The image file as PIL opens it (RGB for the image; the mask as it is: the processor makes it grayscale)."""
    from PIL import Image, UnidentifiedImageError

    path = pathlib.Path(path)
    try:
        with Image.open(path) as opened:
            return opened.convert("RGB") if flag == "--image" else opened.copy()
    except (OSError, UnidentifiedImageError) as e:
        raise InputError(f"{flag} {path}: cannot read it as an image ({type(e).__name__}: {e})") from None


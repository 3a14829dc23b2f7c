"""An uploaded photo as the image page's pixels: checked (size, type, header, aspect), turned upright, shrunk by
block means to at most MAX_IMAGE_SIDE × MAX_IMAGE_SIDE, and flattened to RGB; never decoded whole when it is large.

Shape legend: H rows, W columns, 3 channels (R, G, B, float32 in [0, 1] before the page scales them).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np
import torch

from attention_core.errors import N_, InputError
from attention_core.lessons.image_attention.page import (
    MAX_IMAGE_SIDE,
    MAX_UPLOAD_BYTES,
    MAX_UPLOAD_PIXELS,
    UPLOAD_TYPES,
)

# ---------------------------------------------------------------- uploads


@dataclass(frozen=True)
class UploadedImage:
    """A decoded, downscaled upload.

    Attributes:
        pixels: (h, w, 3) uint8, h and w at most MAX_IMAGE_SIDE (the aspect ratio kept).
        format: "PNG" or "JPEG".
        original_size: (width, height) of the file's image, as Pillow reports it.
    """

    pixels: torch.Tensor
    format: str
    original_size: tuple[int, int]

    @property
    def centre(self) -> tuple[int, int]:
        """(row, col) of the centre pixel (the lower-right one of the middle four for even sides)."""
        h, w, _channels = self.pixels.shape
        return h // 2, w // 2


def check_upload_size(size: int, name: str) -> None:
    """Refuse a file of ``size`` bytes above :data:`MAX_UPLOAD_BYTES` before any of it is read.

    Raises:
        InputError: the file is too large (its name, its size and the limit in MB, one decimal / whole).
    """
    if size > MAX_UPLOAD_BYTES:
        raise InputError(N_("“{name}” is {size} MB; the limit is {limit} MB."), field="image_upload", name=name,
                         size=f"{size / 2**20:.1f}", limit=f"{MAX_UPLOAD_BYTES / 2**20:.0f}")


def _sniff(data: bytes) -> str | None:
    """"PNG" or "JPEG" from the file's first bytes (its signature), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    return None


def load_upload(data: bytes, filename: str, max_side: int = MAX_IMAGE_SIDE) -> UploadedImage:
    """Check an uploaded file and decode it into a small RGB image.

    The checks, in order (each failure is an :class:`InputError` with a message for the user):
    the name ends in .png, .jpg or .jpeg; the file is not empty and at most MAX_UPLOAD_BYTES;
    its first bytes are a PNG or JPEG signature (a renamed file of another kind is refused);
    the header's width × height is at most MAX_UPLOAD_PIXELS and its longer side at most
    MAX_ASPECT times its shorter one (both read before any pixel is decoded, so a small file
    that would decode to a huge or absurdly thin image is refused cheaply); the pixels decode
    (a damaged or truncated file, or any other failure of the decoder, is refused as unreadable).

    Then the image is shrunk (:func:`_shrink`: JPEGs decode at a reduced scale; bands of rows
    are laid on white where transparent, 16-bit grey is scaled to 8 bits, and each band is
    box-averaged, so the work memory stays near the decoded image's own size), resized with
    Lanczos filtering to fit in max_side × max_side (never upscaled) and turned upright (EXIF
    orientation; an EXIF block that cannot be read leaves the image as stored).

    Args:
        data: the file's bytes.
        filename: its name as uploaded (only its extension is used).
        max_side: the largest side of the result.

    Returns:
        The :class:`UploadedImage`.

    Raises:
        InputError: wrong type, empty, too large (bytes or pixels), too thin, or unreadable.
    """
    from PIL import Image  # Pillow: only needed here

    suffix = PurePath(filename or "").suffix.lower().lstrip(".")
    if suffix not in UPLOAD_TYPES:
        if suffix:
            raise InputError(N_("Only PNG and JPEG images can be used (.png, .jpg, .jpeg); "
                                "this file is “.{suffix}”."), field="image_upload", suffix=suffix[:20])
        raise InputError(N_("Only PNG and JPEG images can be used (.png, .jpg, .jpeg); this file has no extension."),
                         field="image_upload")
    if not data:
        raise InputError(N_("The file is empty."), field="image_upload")
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(N_("The file is {size} MB; the limit is {limit} MB. "
                            "The page shrinks images to 16 × 16 pixels anyway: a smaller file works as well."),
                         field="image_upload", size=f"{len(data) / 2**20:.1f}", limit=f"{MAX_UPLOAD_BYTES / 2**20:.0f}")
    kind = _sniff(data)
    if kind is None:
        raise InputError(N_("This file is not a PNG or JPEG image, whatever its name says: its contents do not start "
                            "like one. Save it as PNG or JPEG and upload it again."), field="image_upload")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            warnings.simplefilter("ignore", UserWarning)  # Pillow's notes on a damaged EXIF block, which we skip
            image = Image.open(io.BytesIO(data), formats=[kind])  # reads the header only
            width, height = image.size
            _check_header(width, height)
            if kind == "JPEG":
                image.draft("RGB", (max_side * 4, max_side * 4))  # decode at a reduced scale: faster, less memory
            image.load()  # before the EXIF: reading a PNG's EXIF decodes the pixels, and their errors count here
            orientation = _orientation(image)
            small = _shrink(image, max_side)
            del image  # the decoded full-size pixels
            small = _upright(small, orientation)
            pixels = torch.from_numpy(np.array(small, dtype=np.uint8))  # (h, w, 3)
    except InputError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise InputError(N_("The image is too large to decode safely (more than {limit} megapixels)."),
                         field="image_upload", limit=f"{MAX_UPLOAD_PIXELS / 1e6:.1f}") from None
    except Exception:  # noqa: BLE001 - whatever the decoder raises for a damaged file, the user gets one message
        raise InputError(N_("The file could not be read as a {kind} image: it is damaged or incomplete. "
                            "Try saving it again."), field="image_upload", kind=kind) from None
    return UploadedImage(pixels=pixels, format=kind, original_size=(width, height))


#: An upload's longer side may be at most this many times its shorter side: thinner images would shrink to a
#: line of pixels (and resampling a 1 × 16-million image costs hundreds of MB).
MAX_ASPECT = 16
#: Pixels of one tile while shrinking: bounds the memory the shrinking needs beside the decoded image.
_TILE_PIXELS = 1 << 16


def _check_header(width: int, height: int) -> None:
    """Refuse, from the header's size alone, an image with too many pixels, one pixel, or a thin strip."""
    if width * height > MAX_UPLOAD_PIXELS:
        raise InputError(N_("The image is {width} × {height} pixels ({megapixels} megapixels); "
                            "the limit is {limit} megapixels."), field="image_upload", width=width,
                         height=height, megapixels=f"{width * height / 1e6:.1f}",
                         limit=f"{MAX_UPLOAD_PIXELS / 1e6:.1f}")
    if width * height < 2:
        raise InputError(N_("The image has a single pixel; attention needs at least two tokens."),
                         field="image_upload")
    if max(width, height) > MAX_ASPECT * min(width, height):
        raise InputError(N_("The image is {width} × {height} pixels: one side is more than {ratio} times the "
                            "other, so it would shrink to a thin line. Crop it closer to a square."),
                         field="image_upload", width=width, height=height, ratio=MAX_ASPECT)


def _orientation(image) -> int:
    """The EXIF orientation tag (1..8), or 1 (as stored) when the file has none or its EXIF cannot be read."""
    try:
        value = image.getexif().get(0x0112, 1)  # 0x0112: Orientation (EXIF 2.3, table 4)
        return value if isinstance(value, int) else 1
    except Exception:  # noqa: BLE001 - a damaged EXIF block does not make the pixels unreadable
        return 1


def _upright(image, orientation: int):
    """``image`` turned as EXIF ``orientation`` says (the table of PIL.ImageOps.exif_transpose); 1 = as stored."""
    from PIL import Image

    t = Image.Transpose
    method = {2: t.FLIP_LEFT_RIGHT, 3: t.ROTATE_180, 4: t.FLIP_TOP_BOTTOM, 5: t.TRANSPOSE, 6: t.ROTATE_270,
              7: t.TRANSVERSE, 8: t.ROTATE_90}.get(orientation)
    return image if method is None else image.transpose(method)


def _shrink(image, max_side: int):
    """The decoded ``image`` as a small RGB image fitting in max_side × max_side (aspect kept, never upscaled).

    Tile by tile: each tile becomes float RGB in [0, 255] (transparent parts laid on white,
    c α + 255 (1 − α); 16-bit grey scaled by 255 / 65535) and is box-averaged by the integer factors
    Pillow's ``thumbnail`` reduces by (reducing gap 2); the small result is then resized with Lanczos
    filtering. Laying on white is linear in (c α, α), so averaging after it equals averaging premultiplied
    colours. Work memory beside the decoded image: one tile (about ``_TILE_PIXELS`` pixels) and the result.
    """
    from PIL import Image

    width, height = image.size
    scale = min(max_side / width, max_side / height, 1.0)
    final = (max(1, round(width * scale)), max(1, round(height * scale)))
    fx, fy = max(1, width // (final[0] * 2)), max(1, height // (final[1] * 2))
    cols, rows = width // fx * fx, height // fy * fy  # whole blocks: at most fx − 1 columns, fy − 1 rows left out
    tile_cols = min(cols, max(fx, _TILE_PIXELS // fy // fx * fx))  # at least one block wide
    tile_rows = min(rows, max(fy, _TILE_PIXELS // tile_cols // fy * fy))
    transparent = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    reduced = []
    for top in range(0, rows, tile_rows):
        strip = []
        for left in range(0, cols, tile_cols):
            part = image.crop((left, top, min(left + tile_cols, cols), min(top + tile_rows, rows)))
            strip.append(_box_mean(_as_rgb(part, transparent), fy, fx))
        reduced.append(np.concatenate(strip, axis=1))
    small = Image.fromarray(np.clip(np.rint(np.concatenate(reduced)), 0, 255).astype(np.uint8), "RGB")
    return small if small.size == final else small.resize(final, Image.Resampling.LANCZOS)


def _as_rgb(part, transparent: bool) -> np.ndarray:
    """A tile as float32 RGB (h, w, 3) in [0, 255]: laid on white if ``transparent``, 16-bit grey scaled down."""
    if part.mode.startswith("I"):  # 16-bit (or 32-bit) grey: 0..65535
        grey = np.asarray(part, dtype=np.float32) * np.float32(255.0 / 65535.0)
        return np.repeat(np.clip(grey, 0.0, 255.0)[..., None], 3, axis=2)
    if not transparent:
        return np.asarray(part.convert("RGB"), dtype=np.float32)
    rgba = np.asarray(part.convert("RGBA"))
    rgb = rgba[..., :3].astype(np.float32)
    rgb -= 255.0
    rgb *= rgba[..., 3:].astype(np.float32) * np.float32(1 / 255)  # c α + 255 (1 − α) = 255 + (c − 255) α
    rgb += 255.0
    return rgb


def _box_mean(rgb: np.ndarray, fy: int, fx: int) -> np.ndarray:
    """The mean of every fy × fx block of ``rgb`` (h, w, 3), h and w multiples of fy and fx: (h/fy, w/fx, 3)."""
    h, w, _ = rgb.shape
    return rgb.reshape(h // fy, fy, w // fx, fx, 3).mean(axis=(1, 3), dtype=np.float32)

"""Uploads on the image page (attention_core/lessons/image_attention/upload.load_upload): files a student might really have, files
that break decoders, and the memory one upload may take on a server the whole class shares."""

from __future__ import annotations

import io
import json
import random
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps, TiffImagePlugin
from PIL.TiffImagePlugin import IFDRational

from attention_core.errors import InputError
from attention_core.lessons.image_attention import page as image
from attention_core.lessons.image_attention import upload as image_upload

ROOT = Path(__file__).resolve().parents[2]
ORIENTATION = 0x0112
IMAGE_DESCRIPTION = 0x010E


def _png(im: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    im.save(buffer, "PNG", **options)
    return buffer.getvalue()


def _coded(width: int, height: int) -> Image.Image:
    """An RGB image whose every pixel differs: (r, c) -> (20 r, 20 c, 200)."""
    rows, cols = np.mgrid[0:height, 0:width]
    return Image.fromarray(np.stack([20 * rows, 20 * cols, np.full_like(rows, 200)], axis=2).astype(np.uint8))


def _rational_description_exif(orientation: int) -> bytes:
    """An EXIF block with the orientation and an ImageDescription stored as RATIONAL where Pillow expects text."""
    ifd = TiffImagePlugin.ImageFileDirectory_v2()
    ifd[ORIENTATION] = orientation
    ifd[IMAGE_DESCRIPTION] = IFDRational(1, 2)
    ifd.tagtype[IMAGE_DESCRIPTION] = 5  # RATIONAL
    buffer = io.BytesIO()
    ifd.save(buffer)
    return b"Exif\x00\x00" + buffer.getvalue()


def test_a_jpeg_whose_exif_holds_a_rational_description_loads_upright():
    """Pillow's ImageOps.exif_transpose raises AttributeError ('IFDRational' has no 'encode') on this file."""
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), (200, 30, 30)).save(buffer, "JPEG", exif=_rational_description_exif(6))
    with pytest.raises(AttributeError):  # what the page used to show as a traceback
        ImageOps.exif_transpose(Image.open(io.BytesIO(buffer.getvalue())))
    upload = image_upload.load_upload(buffer.getvalue(), "photo.jpg")
    assert tuple(upload.pixels.shape) == (16, 8, 3)  # 20 × 10 turned a quarter: 10 wide, 20 tall, then fitted
    assert abs(int(upload.pixels[8, 4, 0]) - 200) < 8 and upload.original_size == (20, 10)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_exif_orientation_turns_the_image_as_pillow_does(orientation):
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    data = _png(_coded(6, 4), exif=exif)
    expected = np.array(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
    assert image_upload.load_upload(data, "coded.png").pixels.numpy().tolist() == expected.tolist()


def test_sixteen_bit_grey_keeps_its_shades():
    """A black-to-white 16-bit gradient used to come out almost all white ([0, 255, 255, …])."""
    levels = np.linspace(0, 65535, 64).round().astype(np.uint16)
    upload = image_upload.load_upload(_png(Image.fromarray(np.tile(levels, (8, 1)))), "grey16.png")
    eight_bit = image_upload.load_upload(_png(Image.fromarray(np.tile((levels // 257).astype(np.uint8), (8, 1)))), "grey.png")
    row = upload.pixels[0, :, 0].tolist()
    assert row == sorted(row) and row[0] < 10 and row[-1] > 245  # dark to light, in order
    assert np.abs(upload.pixels.numpy().astype(int) - eight_bit.pixels.numpy().astype(int)).max() <= 1


@pytest.mark.parametrize("size", [(1, 4096), (4096, 1), (17, 1), (340, 20)])
def test_a_thin_strip_is_refused_from_its_header(size):
    with pytest.raises(InputError) as error:
        image_upload.load_upload(_png(Image.new("L", size)), "strip.png")
    assert "more than 16 times" in error.value.message and error.value.field == "image_upload"


def test_the_longest_accepted_strip_loads():
    assert tuple(image_upload.load_upload(_png(Image.new("L", (16, 1))), "strip.png").pixels.shape) == (1, 16, 3)


def test_a_transparent_half_is_averaged_like_premultiplied_colours():
    """Half opaque red, half transparent black, shrunk to one pixel: red on white averaged, (255, 128, 128).
    Averaging the colours before the alpha would let the hidden black in: (191, 128, 128)."""
    pixels = np.zeros((64, 64, 4), dtype=np.uint8)
    pixels[:, :32] = (255, 0, 0, 255)
    (r, g, b), = image_upload.load_upload(_png(Image.fromarray(pixels)), "half.png", max_side=1).pixels[0].tolist()
    assert r == 255 and abs(g - 128) <= 1 and abs(b - 128) <= 1


# ---------------------------------------------------------------- damaged files


def _seeds() -> list[tuple[str, bytes]]:
    """Valid small files of every kind the page may get, each with an EXIF block (orientation 6, text tags)."""
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 256, (24, 40, 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[ORIENTATION], exif[IMAGE_DESCRIPTION], exif[0x0131] = 6, "desc", "app"
    found = []
    for im, kind in [(rgb, "PNG"), (rgb.convert("RGBA"), "PNG"), (rgb.convert("P"), "PNG"), (rgb.convert("LA"), "PNG"),
                     (rgb.convert("1"), "PNG"), (Image.fromarray(np.asarray(rgb)[..., 0].astype(np.uint16) * 257), "PNG"),
                     (rgb, "JPEG"), (rgb.convert("L"), "JPEG"), (rgb.convert("CMYK"), "JPEG")]:
        buffer = io.BytesIO()
        im.save(buffer, kind, exif=exif)
        found.append((kind, buffer.getvalue()))
    return found


def _png_chunks(data: bytes) -> list[list]:
    chunks, at = [], 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunks.append([kind, bytearray(data[at + 8:at + 8 + length])])
        at += 12 + length
    return chunks


def _png_from(chunks) -> bytes:
    """The chunks as a PNG with correct CRCs, so the damage reaches the decoders behind the CRC check."""
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(body)) + kind + bytes(body) + struct.pack(">I", zlib.crc32(kind + bytes(body)))
        for kind, body in chunks)


def _damage(rng: random.Random, body: bytearray, times: int) -> bytearray:
    for _ in range(times):
        if not body:
            break
        at, what = rng.randrange(len(body)), rng.random()
        if what < 0.6:
            body[at] = rng.choice([0, 1, 2, 5, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif what < 0.8:
            del body[at:at + rng.randint(1, 4)]
        else:
            body[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return body


def _mutant(rng: random.Random, kind: str, data: bytes) -> bytes:
    """A copy of a valid file damaged in its structure: a PNG chunk (or its inflated pixel rows), a JPEG's EXIF
    entry (tag type, count, value) or its first segments, or a file cut short."""
    if rng.random() < 0.1:
        return data[:rng.randrange(8, len(data))]
    if kind == "PNG":
        chunks = _png_chunks(data)
        chunk = chunks[rng.randrange(len(chunks))]
        if chunk[0] == b"IDAT" and rng.random() < 0.5:
            rows = _damage(rng, bytearray(zlib.decompress(bytes(chunk[1]))), rng.randint(1, 4))
            chunk[1] = bytearray(zlib.compress(bytes(rows)))
        else:
            chunk[1] = _damage(rng, chunk[1], rng.randint(1, 4))
        return _png_from(chunks)
    body = bytearray(data)
    tiff = body.find(b"Exif\x00\x00") + 6
    if rng.random() < 0.5 and body[tiff:tiff + 2] == b"II":
        entries = int.from_bytes(body[tiff + 8:tiff + 10], "little")
        entry = min(tiff + 10 + 12 * rng.randrange(max(1, min(entries, 8))), len(body) - 12)
        offset, value = rng.choice([(2, rng.randint(1, 13)), (4, rng.choice([0, 1, 2, 3, 255])), (8, rng.randrange(256))])
        body[entry + offset] = value
    else:
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(2, min(len(body), 400))] = rng.choice([0, 1, 2, 3, 5, 7, 0xFF, rng.randrange(256)])
    return bytes(body)


def test_damaged_files_load_or_get_the_message_never_a_traceback():
    """400 structure-aware mutants of valid PNG and JPEG files (seeded): each loads as a small RGB image or is
    refused with an InputError; no other exception reaches the page."""
    rng, seeds = random.Random(24), _seeds()
    loaded = refused = 0
    for _ in range(400):
        kind, data = rng.choice(seeds)
        try:
            upload = image_upload.load_upload(_mutant(rng, kind, data), "upload." + ("png" if kind == "PNG" else "jpg"))
        except InputError as error:
            assert error.field == "image_upload"
            refused += 1
            continue
        h, w, channels = upload.pixels.shape
        assert channels == 3 and 1 <= h <= image.MAX_IMAGE_SIDE and 1 <= w <= image.MAX_IMAGE_SIDE and h * w >= 2
        loaded += 1
    assert loaded > 50 and refused > 50, (loaded, refused)  # the mutants reach both outcomes


# ---------------------------------------------------------------- memory


def _png16_rgba(width: int, height: int) -> bytes:
    """A 16-bit RGBA PNG (transparent), written chunk by chunk (Pillow does not write 16-bit RGBA)."""
    row = b"\x00" + b"\x12\x34\x56\x78\x9a\xbc\x00\x00" * width
    deflate = zlib.compressobj(9)
    pixels = b"".join(deflate.compress(row) for _ in range(height)) + deflate.flush()
    header = struct.pack(">IIBBBBB", width, height, 16, 6, 0, 0, 0)
    return _png_from([[b"IHDR", header], [b"IDAT", pixels], [b"IEND", b""]])


MEASURE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from attention_core.errors import InputError
    from attention_core.lessons.image_attention import page as image, upload as image_upload

    def kib(name):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])

    image_upload.load_upload(Path(sys.argv[1]).read_bytes(), "warm-up.png")  # imports and first-call costs
    grown = {}
    for path in sys.argv[2:]:
        data = Path(path).read_bytes()
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident size (VmHWM) to now
        before = kib("VmRSS")
        try:
            image_upload.load_upload(data, Path(path).name)
        except InputError:
            pass
        grown[Path(path).name] = (kib("VmHWM") - before) / 1024
        del data
    print(json.dumps(grown))
""")


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_one_upload_at_the_pixel_limit_takes_little_more_memory_than_its_decoded_pixels(tmp_path):
    """Peak resident memory added by one upload, measured in a fresh process. The files are inside the size and
    pixel limits; before, they cost 256 MB (16-bit RGBA), 336 MB (1 × 16,777,216) and 112 MB (16,777,216 × 1).
    An RGB(A) image at the 16.8-megapixel limit decodes to 64 MiB; the shrinking may add a little beside it."""
    side = 4096
    files = {
        "rgba16.png": _png16_rgba(side, side),
        "rgb.png": _png(Image.new("RGB", (side, side), (10, 20, 30))),
        "grey16.png": _png(Image.new("I;16", (side, side))),
        "palette.png": _png(Image.fromarray((np.arange(side) // 16 % 256).astype(np.uint8)[None].repeat(side, 0))
                            .convert("P"), transparency=0),
        "tall.png": _png(Image.new("L", (1, side * side))),
        "wide.png": _png(Image.new("L", (side * side, 1))),
    }
    for name, data in files.items():
        assert len(data) <= image.MAX_UPLOAD_BYTES, name
        (tmp_path / name).write_bytes(data)
    (tmp_path / "small.png").write_bytes(_png(Image.new("RGB", (40, 30))))
    result = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "small.png"),
                             *(str(tmp_path / name) for name in files)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    grown = json.loads(result.stdout.splitlines()[-1])
    limits = {"rgba16.png": 80, "rgb.png": 80, "grey16.png": 48, "palette.png": 48, "tall.png": 8, "wide.png": 8}
    over = {name: f"{grown[name]:.0f} MB > {limit} MB" for name, limit in limits.items() if grown[name] > limit}
    assert not over, (over, grown)

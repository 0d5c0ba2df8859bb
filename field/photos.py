"""Photos from a phone: checked, re-encoded, never trusted.

An upload is refused unless it is a JPEG, PNG or WebP image by its own bytes (never by its
file name or the type the browser claims), at most ``[field] photo_max_bytes`` long and
``photo_max_pixels`` large (checked from the header before anything is decoded, so a
"decompression bomb" is never expanded). Pillow (pinned in ``pyproject.toml``) opens and
verifies it, turns it upright by its EXIF orientation and encodes it again (JPEG, or PNG for
a PNG): what is stored is an image Pillow wrote, without the upload's metadata (the camera's
GPS position among it) or anything hidden after the image. The file name is dropped; the
office serves a photo only at ``/inspections/photos/<id>``, to accounts that may see its site.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from foundation.errors import InputError

#: The image formats taken (Pillow's names) and what is stored for each.
ACCEPTED = {"JPEG": ("JPEG", "image/jpeg"), "PNG": ("PNG", "image/png"), "WEBP": ("JPEG", "image/jpeg"),
            "MPO": ("JPEG", "image/jpeg")}
#: The longest side a stored photo keeps [pixels] (a phone's 4000 px photo is read as well at this).
MAX_SIDE = 2400


@dataclass(frozen=True)
class Photo:
    """A photo as stored."""

    media_type: str
    content: bytes
    width: int
    height: int
    sha256: str


def _kind(data: bytes) -> str | None:
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1", b"ftyphevc"):
        return "HEIC"
    return None


def clean(data: bytes, max_bytes: int, max_pixels: int) -> Photo:
    """Check and re-encode an uploaded photo (see the module docstring).

    Raises
    ------
    InputError
        One line saying what is wrong: empty, too large, not an image, an image of a kind
        not taken, too many pixels, or bytes that do not decode.
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    if not data:
        raise InputError("the photo is empty")
    if len(data) > max_bytes:
        raise InputError(f"the photo is {len(data) / 1048576:.1f} MB; at most {max_bytes / 1048576:.1f} MB is taken")
    kind = _kind(data)
    if kind == "HEIC":
        raise InputError("HEIC photos are not taken: set the phone's camera to JPEG ('Most Compatible'), or send it "
                         "from the browser's photo picker, which converts it")
    if kind is None:
        raise InputError("not a photo: expected a JPEG, PNG or WebP image")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                if im.format not in ACCEPTED:
                    raise InputError(f"a {im.format} image is not taken: expected a JPEG, PNG or WebP image")
                w, h = im.size
                if w * h > max_pixels:
                    raise InputError(f"the photo has {w} x {h} pixels; at most {max_pixels:,} pixels are taken")
                im.verify()
            with Image.open(io.BytesIO(data)) as im:
                fmt = im.format
                im.load()
                im = ImageOps.exif_transpose(im)
                if max(im.size) > MAX_SIDE:
                    im.thumbnail((MAX_SIDE, MAX_SIDE))
                out_fmt, media = ACCEPTED[fmt]
                buf = io.BytesIO()
                if out_fmt == "JPEG":
                    im.convert("RGB").save(buf, "JPEG", quality=85, optimize=True)
                else:
                    (im if im.mode in ("RGB", "RGBA", "L", "LA", "P") else im.convert("RGBA")).save(buf, "PNG",
                                                                                                    optimize=True)
                content = buf.getvalue()
                width, height = im.size
    except InputError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning) as exc:
        raise InputError(f"the photo could not be read as an image ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120] if str(exc) else 'damaged'})") from None
    return Photo(media, content, width, height, hashlib.sha256(content).hexdigest())

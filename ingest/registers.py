"""Register codecs: engineering values <-> 16-bit Modbus registers, vectorised with numpy.

A Modbus register is 16 bits sent big-endian (high byte first; Modbus Application Protocol
V1.1b3 §4.2, "MODBUS uses a big-Endian representation for addresses and data items").
Values wider than one register have no standard order; devices use one of four:

========  ==========================  ==============================================
order     registers of 0x41 0x42 ...  seen in
========  ==========================  ==============================================
``ABCD``  ``[AB] [CD]``               big-endian, the ``generic-manhole`` profile
``CDAB``  ``[CD] [AB]``               word-swapped, factory default of many
                                      transmitters (and mbpoll without ``-B``)
``BADC``  ``[BA] [DC]``               byte-swapped inside each word
``DCBA``  ``[DC] [BA]``               fully little-endian
========  ==========================  ==============================================

``A`` is the most significant byte of the IEEE-754 float32 or two's-complement int32.
For 16-bit types only the byte order inside the word matters: ``ABCD`` and ``CDAB``
mean ``[AB]`` (normal), ``BADC`` and ``DCBA`` mean ``[BA]`` (byte-swapped).

Engineering value and raw value are related by ``value = raw * scale + offset`` for every
data type. Encoding integers rounds to the nearest raw integer and saturates at the
type's range (as a transmitter's output saturates); NaN encodes as ``invalid`` (default:
the type's most negative value, or the largest for uint16), and decoding maps ``invalid``
back to NaN when it is given.
"""

from __future__ import annotations

import numpy as np

from foundation.errors import InputError

DATA_TYPES = ("float32", "int16", "uint16", "int32")
WORD_ORDERS = ("ABCD", "CDAB", "BADC", "DCBA")

#: registers per value of each data type
WIDTH = {"float32": 2, "int16": 1, "uint16": 1, "int32": 2}

#: big-endian numpy dtype of the raw value
_RAW_DTYPE = {"float32": ">f4", "int16": ">i2", "uint16": ">u2", "int32": ">i4"}

#: byte permutation from big-endian (ABCD) to the wire order, per word order
_PERM32 = {
    "ABCD": (0, 1, 2, 3),
    "CDAB": (2, 3, 0, 1),
    "BADC": (1, 0, 3, 2),
    "DCBA": (3, 2, 1, 0),
}
_PERM16 = {"ABCD": (0, 1), "CDAB": (0, 1), "BADC": (1, 0), "DCBA": (1, 0)}

_INT_RANGE = {
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
}
#: raw value sent for NaN when a field gives no ``invalid`` of its own
DEFAULT_INVALID = {"int16": -(2**15), "uint16": 2**16 - 1, "int32": -(2**31)}


def check_codec(data_type: str, word_order: str = "ABCD") -> None:
    """Raise :class:`InputError` unless the data type and word order are known."""
    if data_type not in DATA_TYPES:
        raise InputError(f"unknown register data type {data_type!r} (known: {', '.join(DATA_TYPES)})")
    if word_order not in WORD_ORDERS:
        raise InputError(f"unknown word order {word_order!r} (known: {', '.join(WORD_ORDERS)})")


def _perm(data_type: str, word_order: str) -> tuple[int, ...]:
    return (_PERM32 if WIDTH[data_type] == 2 else _PERM16)[word_order]


def encode(values, data_type: str = "float32", word_order: str = "ABCD",
           scale: float = 1.0, offset: float = 0.0, invalid: int | None = None) -> np.ndarray:
    """Encode engineering values into registers.

    Parameters
    ----------
    values : array_like, shape (...)
        Engineering values [the field's unit]; NaN is allowed.
    data_type : {'float32', 'int16', 'uint16', 'int32'}
    word_order : {'ABCD', 'CDAB', 'BADC', 'DCBA'}
    scale, offset : float
        ``value = raw * scale + offset``.
    invalid : int, optional
        Raw integer sent for NaN (integer types only).

    Returns
    -------
    numpy.ndarray of uint16, shape (..., width)
        The registers in wire order, width 1 or 2 (:data:`WIDTH`).
    """
    check_codec(data_type, word_order)
    v = np.asarray(values, dtype=np.float64)
    raw = (v - offset) / scale if (scale != 1.0 or offset != 0.0) else v
    if data_type == "float32":
        typed = raw.astype(">f4")
    else:
        lo, hi = _INT_RANGE[data_type]
        nan = np.isnan(raw)
        fill = DEFAULT_INVALID[data_type] if invalid is None else invalid
        r = np.clip(np.rint(np.where(nan, 0.0, raw)), lo, hi)
        r = np.where(nan, fill, r)
        typed = r.astype(np.int64).astype(_RAW_DTYPE[data_type])
    nbytes = 2 * WIDTH[data_type]
    b = np.ascontiguousarray(typed).view(np.uint8).reshape(v.shape + (nbytes,))
    perm = _perm(data_type, word_order)
    if perm != tuple(range(nbytes)):
        b = b[..., list(perm)]
    return np.ascontiguousarray(b).view(">u2").reshape(v.shape + (WIDTH[data_type],)).astype(np.uint16)


def decode(registers, data_type: str = "float32", word_order: str = "ABCD",
           scale: float = 1.0, offset: float = 0.0, invalid: int | None = None) -> np.ndarray:
    """Decode registers into engineering values (inverse of :func:`encode`).

    Parameters
    ----------
    registers : array_like of int, shape (..., width)
        Registers in wire order, each 0..65535.
    data_type, word_order, scale, offset, invalid
        As in :func:`encode`; a raw integer equal to ``invalid`` decodes as NaN.

    Returns
    -------
    numpy.ndarray of float64, shape (...)
        Engineering values [the field's unit].
    """
    check_codec(data_type, word_order)
    r = np.asarray(registers)
    w = WIDTH[data_type]
    if r.ndim == 0 or r.shape[-1] != w:
        raise InputError(f"{data_type} needs {w} register(s) per value, got shape {r.shape}")
    if r.size and (r.min() < 0 or r.max() > 0xFFFF):
        raise InputError("register values must be 0..65535")
    shape = r.shape[:-1]
    b = np.ascontiguousarray(r.astype(">u2")).view(np.uint8).reshape(shape + (2 * w,))
    perm = _perm(data_type, word_order)
    if perm != tuple(range(2 * w)):
        inv = np.argsort(perm)
        b = b[..., list(inv)]
    raw = np.ascontiguousarray(b).view(_RAW_DTYPE[data_type]).reshape(shape)
    out = raw.astype(np.float64)
    if data_type != "float32" and invalid is not None:
        out[raw == invalid] = np.nan
    if scale != 1.0 or offset != 0.0:
        out = out * scale + offset
    return out

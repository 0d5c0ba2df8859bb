"""A Sparkplug B metric's value as a number, by its declared data type; compressed payloads opened.

The data types (Eclipse Sparkplug 3.0, chapter "Payloads", "Data Types" and "Datatype
Details"): Int8, Int16, Int32 are *signed* integers carried in the protobuf ``uint32``
field ``int_value``, Int64 a signed integer in the ``uint64`` field ``long_value``; UInt8,
UInt16, UInt32 unsigned in ``int_value``, UInt64 in ``long_value``; Float a 32-bit and
Double a 64-bit floating point number; Boolean a bool. A negative signed integer is its
two's complement: of the declared width (pysparkplug sends Int8 -5 as 251), or, for the
narrow types, sign-extended to the 32 bits of the field (Tahu's JavaScript library, through
protobufjs, sends Int8 -5 as 4294967291); both are read here, and a value that fits neither
is refused rather than wrapped. Tahu's JavaScript library also puts a UInt32 in
``long_value``; either integer field is accepted for any integer type.

What sewerwatch can judge is a number: the integer types, Float, Double and Boolean (0 or
1). String, DateTime, Text, UUID, DataSet, Bytes, File, Template and the array types are
not, and a metric of one of them mapped to a sensor is a dead letter naming the type.

Compression (specification, "Payloads", "Compression"; Tahu's ``compressPayload``): a
payload whose ``uuid`` is ``SPBV1.0_COMPRESSED`` carries the real payload in ``body``,
compressed with the algorithm its String metric ``algorithm`` names, ``DEFLATE`` (the
default; zlib's format, or raw) or ``GZIP``. It is opened at most up to ``[ingest]
max_payload_bytes``, so a small message cannot unpack into gigabytes.
"""

from __future__ import annotations

import zlib

#: Sparkplug B data type codes (specification, "Data Types").
DATATYPE_NAMES = {0: "Unknown", 1: "Int8", 2: "Int16", 3: "Int32", 4: "Int64", 5: "UInt8", 6: "UInt16",
                  7: "UInt32", 8: "UInt64", 9: "Float", 10: "Double", 11: "Boolean", 12: "String",
                  13: "DateTime", 14: "Text", 15: "UUID", 16: "DataSet", 17: "Bytes", 18: "File", 19: "Template",
                  20: "PropertySet", 21: "PropertySetList", 22: "Int8Array", 23: "Int16Array", 24: "Int32Array",
                  25: "Int64Array", 26: "UInt8Array", 27: "UInt16Array", 28: "UInt32Array", 29: "UInt64Array",
                  30: "FloatArray", 31: "DoubleArray", 32: "BooleanArray", 33: "StringArray", 34: "DateTimeArray"}
#: Signed integer types -> their width [bits].
SIGNED_BITS = {1: 8, 2: 16, 3: 32, 4: 64}
#: Unsigned integer types -> their width [bits].
UNSIGNED_BITS = {5: 8, 6: 16, 7: 32, 8: 64}
FLOAT, DOUBLE, BOOLEAN = 9, 10, 11
#: The types whose value is a number sewerwatch can judge.
NUMERIC = frozenset(SIGNED_BITS) | frozenset(UNSIGNED_BITS) | {FLOAT, DOUBLE, BOOLEAN}
_INT_FIELDS = ("int_value", "long_value")
_FLOAT_FIELDS = ("float_value", "double_value")

#: A compressed payload's ``uuid`` (Tahu's ``SPBV1.0_COMPRESSED``).
COMPRESSED_UUID = "SPBV1.0_COMPRESSED"
#: The metric naming the algorithm of a compressed payload, and the algorithms known.
ALGORITHM_METRIC = "algorithm"
ALGORITHMS = ("DEFLATE", "GZIP")


class NotANumber(ValueError):
    """A metric whose value cannot be read as a number; the message says why."""


def type_name(datatype: int | None) -> str:
    """``Int8 (1)``: a data type as a reason names it."""
    if datatype is None:
        return "no datatype"
    return f"{DATATYPE_NAMES.get(datatype, 'unknown datatype')} ({datatype})"


def numeric_value(metric, datatype: int | None) -> float:
    """The value of ``metric`` (a ``Payload.Metric``) as a float, read as ``datatype`` says.

    Parameters
    ----------
    metric : Payload.Metric
        The protobuf metric, its value in one of the ``value`` fields.
    datatype : int or None
        The metric's data type: its own, else the one its birth certificate declared.

    Raises
    ------
    NotANumber
        A type sewerwatch cannot judge, a value in a field the type does not use, or an
        integer that does not fit its declared width.
    """
    kind = metric.WhichOneof("value")
    if datatype is None or datatype == 0:
        # no type declared here or in the birth: only a value that cannot be misread
        if kind in _FLOAT_FIELDS:
            return float(getattr(metric, kind))
        if kind == "boolean_value":
            return float(metric.boolean_value)
        raise NotANumber(f"no datatype in the metric or its birth certificate for a value in {kind or 'no field'} "
                         "(signed or unsigned?)")
    if datatype not in NUMERIC:
        raise NotANumber(f"datatype {type_name(datatype)} is not a number sewerwatch can judge")
    if datatype in (FLOAT, DOUBLE):
        if kind not in _FLOAT_FIELDS:
            raise NotANumber(f"a {type_name(datatype)} value in {kind or 'no field'}")
        return float(getattr(metric, kind))
    if datatype == BOOLEAN:
        if kind != "boolean_value":
            raise NotANumber(f"a Boolean (11) value in {kind or 'no field'}")
        return float(metric.boolean_value)
    if kind not in _INT_FIELDS:
        raise NotANumber(f"a {type_name(datatype)} value in {kind or 'no field'}")
    raw = int(getattr(metric, kind))
    field_bits = 32 if kind == "int_value" else 64
    if datatype in UNSIGNED_BITS:
        bits = UNSIGNED_BITS[datatype]
        if raw >= 1 << bits:
            raise NotANumber(f"value {raw} does not fit {type_name(datatype)}")
        return float(raw)
    return float(signed(raw, SIGNED_BITS[datatype], field_bits, datatype))


def signed(raw: int, bits: int, field_bits: int, datatype: int) -> int:
    """``raw`` (the unsigned field) as the signed integer of ``bits`` bits it encodes:
    two's complement of the declared width, or sign-extended to the field's ``field_bits``."""
    if raw < 1 << bits:
        return raw - (1 << bits) if raw >= 1 << (bits - 1) else raw
    if bits < field_bits and raw >= (1 << field_bits) - (1 << (bits - 1)):
        return raw - (1 << field_bits)
    raise NotANumber(f"value {raw} does not fit {type_name(datatype)}")


def algorithm_of(payload) -> str:
    """The compression algorithm a compressed payload names (DEFLATE when none)."""
    for m in payload.metrics:
        if m.name == ALGORITHM_METRIC and m.WhichOneof("value") == "string_value":
            return m.string_value.upper()
    return "DEFLATE"


def decompress(payload, max_bytes: int) -> bytes:
    """The inner payload bytes of a compressed payload, at most ``max_bytes`` long.

    Raises
    ------
    ValueError
        An unknown algorithm, a body that is not what the algorithm makes, or one that
        opens to more than ``max_bytes``.
    """
    algorithm = algorithm_of(payload)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"compressed with {algorithm[:40]!r}, not one of {', '.join(ALGORITHMS)}")
    body = bytes(payload.body)
    tries = (16 + zlib.MAX_WBITS,) if algorithm == "GZIP" else (zlib.MAX_WBITS, -zlib.MAX_WBITS)
    last = None
    for wbits in tries:
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(body, max_bytes + 1)
        except zlib.error as exc:
            last = exc
            continue
        if len(out) > max_bytes or d.unconsumed_tail:
            raise ValueError(f"the {algorithm} body opens to more than {max_bytes:,} bytes ([ingest] max_payload_bytes)")
        if not d.eof:
            raise ValueError(f"the {algorithm} body is cut short")
        return out
    raise ValueError(f"the body is not {algorithm} data ({last})")

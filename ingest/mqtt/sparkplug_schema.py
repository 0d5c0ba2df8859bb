"""The part of the Sparkplug B payload schema sewerwatch reads, built with the protobuf library.

Written from the Sparkplug B specification (Eclipse Sparkplug 3.0, chapter "Payloads",
message ``Payload`` and ``Payload.Metric``; the field numbers and the data type codes are
the specification's): a payload's ``timestamp`` (1, ms since the epoch), ``metrics`` (2),
``seq`` (3), ``uuid`` (4), ``body`` (5); a metric's ``name`` (1), ``alias`` (2), ``timestamp``
(3), ``datatype`` (4), ``is_historical`` (5), ``is_transient`` (6), ``is_null`` (7) and its
value, one of ``int_value`` (10), ``long_value`` (11), ``float_value`` (12),
``double_value`` (13), ``boolean_value`` (14), ``string_value`` (15), ``bytes_value`` (16).
Fields sewerwatch does not read (metadata, properties, data sets, templates) are left out of
this schema; protobuf keeps them as unknown fields, so a full payload decodes the same.

The schema is built at import as a ``FileDescriptorProto`` and turned into message classes
by protobuf itself (``message_factory.GetMessageClass``): the decoding is protobuf's own
(its upb C implementation), with no generated module to keep in step and no code generator
to install. :data:`Payload` is the message class.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["DATATYPES", "Payload"]

#: Sparkplug B data type codes (specification, "Data Types") of the metrics a reading can be.
DATATYPES = {1: "Int8", 2: "Int16", 3: "Int32", 4: "Int64", 5: "UInt8", 6: "UInt16", 7: "UInt32", 8: "UInt64",
             9: "Float", 10: "Double", 11: "Boolean", 12: "String", 13: "DateTime", 14: "Text"}

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED


def _field(msg, name: str, number: int, ftype: int, label: int = _OPTIONAL, type_name: str | None = None,
           oneof: int | None = None) -> None:
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="sewerwatch_sparkplug_b.proto", package="sewerwatch.sparkplug_b",
                                            syntax="proto2")
    payload = fd.message_type.add(name="Payload")
    metric = payload.nested_type.add(name="Metric")
    metric.oneof_decl.add(name="value")
    for name, number, ftype in (("name", 1, _F.TYPE_STRING), ("alias", 2, _F.TYPE_UINT64),
                                ("timestamp", 3, _F.TYPE_UINT64), ("datatype", 4, _F.TYPE_UINT32),
                                ("is_historical", 5, _F.TYPE_BOOL), ("is_transient", 6, _F.TYPE_BOOL),
                                ("is_null", 7, _F.TYPE_BOOL)):
        _field(metric, name, number, ftype)
    for name, number, ftype in (("int_value", 10, _F.TYPE_UINT32), ("long_value", 11, _F.TYPE_UINT64),
                                ("float_value", 12, _F.TYPE_FLOAT), ("double_value", 13, _F.TYPE_DOUBLE),
                                ("boolean_value", 14, _F.TYPE_BOOL), ("string_value", 15, _F.TYPE_STRING),
                                ("bytes_value", 16, _F.TYPE_BYTES)):
        _field(metric, name, number, ftype, oneof=0)
    _field(payload, "timestamp", 1, _F.TYPE_UINT64)
    _field(payload, "metrics", 2, _F.TYPE_MESSAGE, _REPEATED, ".sewerwatch.sparkplug_b.Payload.Metric")
    _field(payload, "seq", 3, _F.TYPE_UINT64)
    _field(payload, "uuid", 4, _F.TYPE_STRING)
    _field(payload, "body", 5, _F.TYPE_BYTES)
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
#: The Sparkplug B ``Payload`` message class (``Payload.FromString(raw)``, ``Payload.Metric``).
Payload = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("sewerwatch.sparkplug_b.Payload"))

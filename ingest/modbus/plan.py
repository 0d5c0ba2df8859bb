"""Read plans: which Modbus read requests fetch every register a device profile uses.

A plan is computed once per profile and shared by every device with that profile. Fields
in the same register table are sorted by address and merged into one request while the
request stays within :data:`MAX_READ_REGISTERS` and the hole between two fields is at most
``max_fill`` registers (the hole is read and thrown away: one request costs a round trip,
a few extra registers cost nothing; Telegraf's modbus input does the same with its
``optimization_max_register_fill``). ``max_fill=0`` merges only touching fields, for
devices that answer a read of an unmapped register with exception 02.

The registers a plan reads are laid out in the same blocks
:meth:`ingest.profiles.Profile.decode_tables` takes: per table, one row of
``span(table)[1]`` registers starting at ``span(table)[0]``; registers no request covers
stay 0 and are never decoded.

References
----------
Modbus Application Protocol Specification V1.1b3, §6.3 (Read Holding Registers, function
03) and §6.4 (Read Input Registers, function 04): "Quantity of Registers 1 to 125 (0x7D)".
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.errors import InputError
from ingest.profiles import FUNCTION_CODE, Profile

#: at most 125 registers in one read request (Modbus Application Protocol V1.1b3 §6.3, §6.4)
MAX_READ_REGISTERS = 125
#: default hole between two fields that is still read in the same request [registers]
DEFAULT_MAX_FILL = 16


@dataclass(frozen=True)
class Request:
    """One read request.

    Attributes
    ----------
    table : str
        ``"holding"`` (function 03) or ``"input"`` (function 04).
    address : int
        First protocol address (0-based, as on the wire).
    count : int
        Registers to read, 1..125.
    offset : int
        Where the answer goes in the table's block row [registers from ``span(table)[0]``].
    """

    table: str
    address: int
    count: int
    offset: int = 0

    @property
    def function_code(self) -> int:
        return FUNCTION_CODE[self.table]


def merge_cells(cells, max_fill: int = DEFAULT_MAX_FILL,
                max_count: int = MAX_READ_REGISTERS) -> list[tuple[int, int]]:
    """Merge register cells of one table into as few ``(address, count)`` reads as possible.

    Parameters
    ----------
    cells : iterable of (int, int)
        ``(address, width)`` of each value [registers]; may overlap, any order.
    max_fill : int
        Largest hole between two cells still read in one request [registers].
    max_count : int
        Largest request [registers], at most :data:`MAX_READ_REGISTERS`.

    Returns
    -------
    list of (int, int)
        ``(address, count)`` per request, in address order. Every cell lies wholly inside
        one request (a value is never split across two reads, so a cell wider than
        ``max_count`` is an error).
    """
    if not 1 <= max_count <= MAX_READ_REGISTERS:
        raise InputError(f"max_count: expected 1..{MAX_READ_REGISTERS} registers, got {max_count}")
    if max_fill < 0:
        raise InputError(f"max_fill: expected 0 or more registers, got {max_fill}")
    out: list[list[int]] = []  # [start, end) per request
    for address, width in sorted((int(a), int(w)) for a, w in cells):
        if width < 1 or width > max_count:
            raise InputError(f"register cell at {address}: width {width} does not fit one request of {max_count}")
        if address < 0 or address + width > 65536:
            raise InputError(f"register cell at {address} (width {width}) lies outside addresses 0..65535")
        end = address + width
        if out and address - out[-1][1] <= max_fill and max(end, out[-1][1]) - out[-1][0] <= max_count:
            out[-1][1] = max(end, out[-1][1])
        else:
            out.append([address, end])
    return [(a, e - a) for a, e in out]


def plan(profile: Profile, max_fill: int = DEFAULT_MAX_FILL,
         max_count: int = MAX_READ_REGISTERS) -> tuple[Request, ...]:
    """The read requests fetching every field and the status register of ``profile``.

    Parameters
    ----------
    profile : ingest.profiles.Profile
    max_fill, max_count : int
        See :func:`merge_cells`.

    Returns
    -------
    tuple of Request
        Holding-register requests first, then input-register requests, each in address order.
    """
    out = []
    for table in profile.tables():
        cells = [(f.address, f.width) for f in profile.fields if f.register == table]
        if profile.status and profile.status.register == table:
            cells.append((profile.status.address, 1))
        start = profile.span(table)[0]
        for address, count in merge_cells(cells, max_fill, max_count):
            out.append(Request(table, address, count, address - start))
    return tuple(out)

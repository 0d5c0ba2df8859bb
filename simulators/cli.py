"""CLI: ``sewerwatch simulate``."""

from __future__ import annotations

from sewerwatch.cli import not_built


def register(sub) -> None:
    p = sub.add_parser("simulate", help="run simulated control-manhole devices (Modbus TCP, MQTT)")
    p.set_defaults(func=not_built("simulate", "issue 4, simulators"))

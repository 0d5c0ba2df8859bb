"""The reference pages of the files people write (``docs/reference/``), whole: the pack, permit
and config pages of :func:`limits.pack_cli.reference_files` with what the floors above limits
own added (the formula kinds of the charges, :func:`lab.reference.pack_appendix`). The shell
wires it into ``sewerwatch pack reference``; ``tests/test_pack_format.py`` keeps the files current."""

from __future__ import annotations

from lab.reference import pack_appendix
from limits.pack_cli import reference_files as _base


def reference_files() -> dict[str, str]:
    """File name -> text of every reference page and JSON Schema."""
    return _base({"pack": pack_appendix()})

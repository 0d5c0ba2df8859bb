"""ingest: collectors, device profiles, normalisation, the writer and its spool
(see README.md beside this file).

The face other packages may use, by module (imported by name, ``from ingest import
profiles``; this file imports none of them so that ``import ingest.cli`` stays light):

- ``batch``: ``Readings`` (four parallel numpy arrays) and the quality flags;
- ``profiles``: the Modbus register maps shared with the simulators (``load``, ``names``,
  ``Profile``); ``registers``: their codecs;
- ``service``: ``start(cfg, ...)`` the collectors and the writer wired from the config,
  with taps on the sink (what ``sewerwatch run`` and ``collect`` use);
- ``modbus.options``: ``Options``, the ``[modbus]`` table validated.

Everything else (``sink``, ``writer``, ``spool``, ``normalise``, ``mqtt.*``,
``modbus.*``) is the package's own; tests reach into it.
"""

__all__ = ["batch", "profiles", "registers", "service"]

"""The Modbus TCP collector (see README.md beside this file): ``collector``, ``options``, ``plan``,
``health``."""

__all__ = ["collector", "health", "options", "plan"]

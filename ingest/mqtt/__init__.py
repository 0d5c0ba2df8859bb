"""The MQTT collector (see README.md beside this file): ``collector``, ``payload``, ``topics``."""

__all__ = ["collector", "payload", "topics"]

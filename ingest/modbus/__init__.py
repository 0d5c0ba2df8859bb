"""The Modbus TCP collector (see README.md beside this file): ``collector``, ``plan``, ``health``."""

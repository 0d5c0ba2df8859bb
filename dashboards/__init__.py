"""dashboards: Grafana dashboards as code (see README.md beside this file).

The face, by module (imported by name; this file imports none of them so that
``import dashboards.cli`` stays light): ``definitions`` (``build_all``), ``export``
(``write``, ``DbTarget``), ``push`` (``push``, ``check_url``), ``preview``
(``render_all``), ``macros`` (``expand``: Grafana's SQL macros).
"""

__all__ = ["definitions", "export", "macros", "preview", "push"]

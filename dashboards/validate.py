"""Check dashboard JSON against Grafana's JSON schemas (draft-07).

The schemas are the grafana-foundation-sdk's (build 1769699241) in
``<repo>/../shared/grafana-jsonschema``: ``dashboard.jsonschema.json`` for the dashboard
and its panels, and one file per panel plugin (``timeseries``, ``table``, ``stat``) whose
``Options`` and ``FieldConfig`` definitions check a panel's ``options`` and
``fieldConfig.defaults.custom``.
"""

from __future__ import annotations

import json
from pathlib import Path

from foundation.paths import PROJECT_ROOT

SCHEMA_DIR = PROJECT_ROOT.parent / "shared" / "grafana-jsonschema"
PANEL_TYPES = ("timeseries", "table", "stat")


def _load(directory: Path, name: str) -> dict:
    return json.loads((directory / f"{name}.jsonschema.json").read_text(encoding="utf-8"))


def _sub(schema: dict, definition: str) -> dict:
    """A schema that validates against one definition of ``schema``."""
    return {"$schema": schema.get("$schema"), "$ref": f"#/definitions/{definition}",
            "definitions": schema["definitions"]}


def errors(dashboard: dict, directory: Path | str = SCHEMA_DIR) -> list[str]:
    """Every schema error in ``dashboard`` as ``path: message`` lines (empty when valid)."""
    import jsonschema   # lazy: a dev dependency (the tests validate; running sewerwatch does not)

    directory = Path(directory)
    out: list[str] = []

    def check(schema: dict, instance, where: str) -> None:
        for err in jsonschema.Draft7Validator(schema).iter_errors(instance):
            path = "/".join(str(p) for p in err.absolute_path)
            out.append(f"{where}{'/' + path if path else ''}: {err.message}")

    board = _load(directory, "dashboard")
    # panels are checked one by one against Panel (or RowPanel) so that an error names
    # the field, not just "not valid under any of the given schemas" of the oneOf
    check(board, {k: v for k, v in dashboard.items() if k != "panels"}, "dashboard")
    if "panels" in dashboard and not isinstance(dashboard["panels"], list):
        out.append("dashboard/panels: not a list")
        return out
    plugins = {t: _load(directory, t) for t in PANEL_TYPES}
    for i, panel in enumerate(dashboard.get("panels", [])):
        where = f"panels/{i} ({panel.get('title', '?') if isinstance(panel, dict) else '?'})"
        if not isinstance(panel, dict):
            out.append(f"{where}: not an object")
            continue
        check(_sub(board, "RowPanel" if panel.get("type") == "row" else "Panel"), panel, where)
        if panel.get("type") == "row":
            continue
        schema = plugins.get(panel.get("type"))
        if schema is None:
            out.append(f"{where}: panel type {panel.get('type')!r} has no schema here "
                       f"(checked: {', '.join(PANEL_TYPES)})")
            continue
        check(_sub(schema, "Options"), panel.get("options", {}), where + "/options")
        custom = panel.get("fieldConfig", {}).get("defaults", {}).get("custom")
        if custom is not None:
            check(_sub(schema, "FieldConfig"), custom, where + "/fieldConfig/defaults/custom")
    return out

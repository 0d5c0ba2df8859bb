"""Reference pages of the project's TOML files, written from the models that check them.

:func:`markdown` walks the JSON Schema of a :func:`foundation.schema.table` class (pydantic
writes it from the fields, their types, defaults and docstrings) and gives one section per
table, each a list of its keys: type, required or default, and what it means. Nothing here
knows a key: a field added to a model appears on the page and in the schema when they are
generated again (``sewerwatch pack reference``; a test keeps the committed ones current).
"""

from __future__ import annotations

import json


def _ref(node: dict) -> str | None:
    r = node.get("$ref")
    return r.rsplit("/", 1)[-1] if r else None


def _type(node: dict, defs: dict) -> str:
    """A property's type in words."""
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(x)}`" for x in node["enum"])
    if _ref(node):
        return "table"
    for key in ("anyOf", "oneOf"):
        if key in node:
            parts = [_type(x, defs) for x in node[key] if x.get("type") != "null"]
            return " or ".join(dict.fromkeys(parts))
    t = node.get("type")
    if t == "array":
        items = node.get("items", {})
        if _ref(items) or any(_ref(x) for x in items.get("oneOf", items.get("anyOf", []))):
            return "array of tables"
        return f"array of {_type(items, defs) or 'values'}"
    if t == "object":
        extra = node.get("additionalProperties")
        return f"table of {_type(extra, defs)}" if isinstance(extra, dict) and extra else "table"
    if node.get("format") == "date":
        return "date"
    return {"string": "string", "number": "number", "integer": "integer", "boolean": "true or false"}.get(t, "value")


def _children(node: dict) -> list[tuple[str, bool]]:
    """The tables a property holds: ``[(def name, is an array), ...]``."""
    out = []
    if _ref(node):
        out.append((_ref(node), False))
    for key in ("anyOf", "oneOf"):
        for x in node.get(key, []):
            out += _children(x)
    if node.get("type") == "array":
        out += [(name, True) for name, _ in _children(node.get("items", {}))]
    return out


def _default(node: dict, required: bool) -> str:
    if required:
        return "required"
    if "default" not in node or node["default"] is None:
        return "optional"
    d = node["default"]
    return "default `" + (json.dumps(d) if not isinstance(d, bool) else str(d).lower()) + "`"


def markdown(schema: dict, title: str, intro: str, example: str = "", example_title: str = "") -> str:
    """The reference page of a file whose JSON Schema is ``schema``."""
    defs = schema.get("$defs", {})
    out = [f"# {title}", "", intro.strip(), ""]
    if example:
        out += [f"## Example: {example_title}", "", "```toml", example.strip(), "```", ""]
    seen: set[tuple[str, str]] = set()

    def section(header: str, node: dict, path: str) -> None:
        if (header, json.dumps(node, sort_keys=True)) in seen:
            return
        seen.add((header, json.dumps(node, sort_keys=True)))
        out.extend([f"## {header}", ""])
        if node.get("description"):
            out.extend([node["description"].strip().replace("``", "`"), ""])
        props = node.get("properties", {})
        required = set(node.get("required", []))
        out.extend(["| key | type | | meaning |", "|---|---|---|---|"])
        later = []
        for key, p in props.items():
            desc = " ".join((p.get("description") or ("Names this form of the table." if "const" in p else "")).split()).replace("|", "\\|").replace("``", "`")
            out.append(f"| `{key}` | {_type(p, defs)} | {_default(p, key in required)} | {desc} |")
            for name, array in _children(p):
                child = defs[name]
                sub = f"{path}.{key}" if path else key
                kind = child.get("properties", {}).get("kind", {}).get("const")
                form = f' kind = "{kind}"' if kind else (f" ({child.get('title')})" if len(_children(p)) > 1 else "")
                later.append((f"[[{sub}]]{form}" if array else f"[{sub}]{form}", child, sub))
        out.append("")
        for header_, child, sub in later:
            section(header_, child, sub)

    section("Top level", schema, "")
    return "\n".join(out).rstrip() + "\n"

"""CLI: ``sewerwatch pack check FILE``, ``sewerwatch pack list`` and ``sewerwatch pack reference`` (registered by
:mod:`sewerwatch.cli`).

``pack check`` lists every problem of a rule pack, one line each naming the file, the table
and the key (``city.toml: rules[2] (as-max).unit: unknown unit 'ppb' for as (known: mg/l, ug/l,
ppm)``), and exits 2 when there is one; a pack without problems is summarised. Beyond what
the model refuses (:class:`limits.packs.PackFile`: unknown keys, kinds, analytes, units,
comparisons, a limit without its words or section) it finds rules that overlap: two that
limit the same thing the same way (a parameter in one direction, an analyte on one basis),
of which only one can be the ordinance's.

``pack list [--json]`` shows every pack on the search path with where each comes from.

``pack reference [--out DIR]`` writes the reference pages and JSON Schemas of the pack, the
permit and the config files (``docs/reference/``) from the models that check them.
"""

from __future__ import annotations

import json
from pathlib import Path

from foundation import tomlfile
from foundation.errors import InputError
from foundation.paths import PROJECT_ROOT

REFERENCE_DIR = PROJECT_ROOT / "docs" / "reference"


def register(sub) -> None:
    p = sub.add_parser("pack", help="check a rule pack, or write the reference of the files",
                       description="Check a rule pack file, or write the reference pages and JSON Schemas.")
    psub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = psub.add_parser("check", help="list every problem of a rule pack, one line each (exit 2 if any)")
    c.add_argument("file", help="the pack's TOML file, or a pack id on the pack search path")
    c.set_defaults(func=_check)
    li = psub.add_parser("list", help="the rule packs on the pack search path and where each comes from")
    li.add_argument("--json", action="store_true", help="print JSON")
    li.set_defaults(func=_list)
    r = psub.add_parser("reference", help="write the reference pages and JSON Schemas (docs/reference/)")
    r.add_argument("--out", metavar="DIR", default=str(REFERENCE_DIR), help="folder (default docs/reference/)")
    r.set_defaults(func=_reference)


def _check(args, ctx) -> int:
    from limits.packs import pack_path  # lazy: numpy

    path = pack_path(args.file)
    lines = check_pack(path)
    for line in lines:
        print(line)
    if lines:
        print(f"sewerwatch: error: {path}: {len(lines)} problem{'s' * (len(lines) != 1)}", file=__import__("sys").stderr)
        return 2
    from limits.packs import load_pack

    pack = load_pack(str(path))
    print(f"{path}: ok: {pack.name} ({pack.code}), {len(pack.rules)} rules, {len(pack.charges)} charges, "
          f"{len(pack.analytes)} analytes of its own")
    return 0


def pack_list() -> list[dict]:
    """Each rule pack on the search path (:func:`foundation.config.pack_sources`): its id, the
    name it gives (or the problem loading it), and every file of that id with where its folder
    comes from (the config's ``pack_dirs``, ``$SEWERWATCH_PACK_PATH``, shipped); two files of
    one id are a problem (using it is refused, naming both)."""
    from foundation import config
    from foundation.errors import SewerwatchError
    from limits.packs import load_pack

    out = []
    for pid in config.known_packs():
        files = config.pack_files(pid)
        row = {"id": pid, "files": [{"path": str(f), "from": w} for f, w in files], "name": None, "problem": None}
        try:
            row["name"] = load_pack(pid).name
        except SewerwatchError as exc:
            row["problem"] = str(exc)
        out.append(row)
    return out


def _list(args, ctx) -> int:
    rows = pack_list()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        where = "; ".join(f"{f['from']}: {f['path']}" for f in r["files"])
        print(f"{r['id']}  {r['name'] or 'cannot be used: ' + r['problem']}  ({where})")
    return 0


def check_pack(path) -> list[str]:
    """Every problem of the pack file ``path``, one line each (empty: none)."""
    from foundation.schema import item_label, problems
    from limits.packs import PackFile, load_pack, not_a_pack, overlaps

    path = Path(path)
    try:
        data = tomlfile.read(path, "rule pack")
        not_a_pack(data, path)
    except InputError as exc:
        return [str(exc)]
    found = problems(PackFile, data, context={"expected_id": path.stem}, label=item_label(("rules",), data))
    if found:
        return [f"{path}: {k}: {m}" if k else f"{path}: {m}" for k, m in found]
    try:
        pack = load_pack(str(path))
    except InputError as exc:        # a model entry that cannot be resolved
        return [str(exc)]
    return [f"{path}: {where}: {problem}" for where, problem in overlaps(pack)]


#: every path a pack, a permit or a config names, and what it is relative to
PATHS = (
    ("a pack's `seed`", "a file name only, never opened: where the words were copied from, kept as each rule's "
     "provenance (the office's evidence shows it to staff; documents for people cite `code` and `section`)"),
    ("a pack given to `--pack` or `pack check` by path", "the working folder"),
    ("a pack given by id", "found as `<id>.toml` on the search path: `$SEWERWATCH_PACK_PATH`, the config's "
     "`[utility] pack_dirs`, the shipped `limits/packs/`; an id found twice is refused (`sewerwatch pack list`)"),
    ("the config's `[utility] pack_dirs`", "the config file's folder"),
    ("a rates, lab, readings or permit file on the command line", "the working folder"),
)


def limits_appendix() -> str:
    """Markdown generated from the limits' model: sample types, averaging periods, paths."""
    from limits.packs import BASES, BASIS_WORDS
    from limits.sample_types import ONE, SAMPLE_TYPES

    out = ["## Sample types", "",
           "A `lab-limit` (and a permit's `[[limits]]` entry) may name the `sample_type` it applies to; one that "
           "names none applies to any sample. An analyte has one limit per sample type and basis. A result is "
           "judged by the limits naming its type (the lab CSV's `sample_type` column, default `grab`), or, where no "
           "limit of its analyte names its type, by those naming none; an average is taken over the results of "
           "the type its limit names. A permit's limit is weighed against the ordinance's of the same type (the "
           "stricter applies).", "", "| `sample_type` | a limit of it is stated |", "|---|---|"]
    out += [f"| `{t}` | \"4.0 mg/l in {ONE[t]}\" |" for t in SAMPLE_TYPES]
    out += ["", "## Averaging periods", "",
            "A lab limit's `basis` says what is judged. Where an ordinance says \"30 day average\" without saying "
            "which days, the pack states the one the utility reads (`monthly` is the common reading; "
            "`rolling-30-day` the strict one) and says why in `note`. The days of violation of an average are "
            "the days of its samples (`[enforcement] average_days = \"sampled\"`) or all of its days "
            "(`\"period\"`).", "", "| `basis` | judged | days of violation |", "|---|---|---|"]
    out += [f"| `{b}` | {BASIS_WORDS[b][0]} | {BASIS_WORDS[b][1]} |" for kind in BASES for b in BASES[kind]]
    out += ["", "## Paths", "", "| path | relative to |", "|---|---|"]
    out += [f"| {a} | {b} |" for a, b in PATHS]
    out.append("")
    return "\n".join(out)


def reference_files(appendix: dict[str, str] | None = None) -> dict[str, str]:
    """File name -> text of every reference page and JSON Schema (``docs/reference/``).

    ``appendix``: page name (``pack``) -> markdown the floors above add to it (the formula
    kinds, :func:`lab.reference.pack_appendix`, passed by the shell).
    """
    from foundation import config
    from foundation.reference import markdown
    from foundation.schema import json_schema
    from limits.packs import PackFile
    from limits.permits import PermitFile

    out = {}
    for name, cls, title, intro, example, example_title in (
        ("pack", PackFile, "Rule pack reference",
         "A rule pack is one TOML file per jurisdiction: its ordinance as data. Packs are found by id "
         "on the pack search path (a file path; the config's `[utility] pack_dirs`; "
         "`$SEWERWATCH_PACK_PATH`; the packs shipped in `limits/packs/`). `sewerwatch pack check FILE` "
         "lists every problem of a pack, one line each. Editors that read JSON Schema (e.g. Even Better "
         "TOML, with `#:schema ../docs/reference/pack.schema.json` as the file's first line) complete "
         "the keys below and mark the wrong ones.", _excerpt("limits/packs/palmyra-wi.toml", 2),
         "the Village of Palmyra, Wisconsin (`limits/packs/palmyra-wi.toml`, first rules)"),
        ("permit", PermitFile, "Discharge permit reference",
         "A wastewater discharge permit as data (`sewerwatch permit import FILE`): its limits are "
         "judged with the ordinance's, the stricter applying.", _excerpt("examples/permits/plating.toml"),
         "`examples/permits/plating.toml`"),
        ("config", config.Config, "Config file reference",
         "The utility's config (`sewerwatch.toml`, `--config FILE` or `$SEWERWATCH_CONFIG`); "
         "`sewerwatch config check` validates it and the pack of its utility. "
         "`[modbus]`, `[documents]` and `[enforcement]` are checked by their owners (see their READMEs).",
         _excerpt("examples/demo-village.toml"), "the demo village (`examples/demo-village.toml`)"),
    ):
        schema = json_schema(cls, title)
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        page = markdown(schema, title, intro, example, example_title)
        if name == "pack":
            page = page.rstrip("\n") + "\n\n" + limits_appendix()
        if appendix and name in appendix:
            page = page.rstrip("\n") + "\n\n" + appendix[name]
        out[f"{name}.md"] = page
    return out


def _excerpt(rel: str, rules: int | None = None) -> str:
    """A shipped file (with ``rules``: its head up to that many ``[[rules]]``)."""
    text = (PROJECT_ROOT / rel).read_text(encoding="utf-8")
    if rules is None:
        return text
    parts = text.split("[[rules]]")
    head = "[[rules]]".join(parts[:rules + 1]).rstrip().splitlines()
    while head and head[-1].startswith("#"):      # a comment of the rule left out
        head.pop()
    return "\n".join(head).rstrip()


def _reference(args, ctx) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = getattr(args, "reference_files", None) or reference_files      # the shell's, with the formula kinds
    for name, text in files().items():
        (out / name).write_text(text, encoding="utf-8")
        print(out / name)
    return 0

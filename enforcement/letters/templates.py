"""The letters' templates: the program's kinds, the utility's folder, and every text saved.

A *kind* of letter is a template named ``<kind>.html``. The program ships its own
(:data:`DEFAULTS`, in ``defaults/``); the utility's folder (``[documents] letters`` of the
config, relative to the config file's folder) may hold a file of the same name, which then
replaces the program's, or a file of a new name, which is a new kind. A template's title is
its first line's comment, ``{# title: Warning letter #}`` (else the file's name in words).

The office saves a template (:func:`save`) by writing the utility's file atomically (a
temporary file beside it, then renamed over it) and keeping the text in the database
(``letter_template_versions``, migration 0310) with who saved it and when, and an
``audit_log`` row. The edit names the version it was loaded from: a version saved since, or
a file changed in the folder meanwhile, refuses the save (:class:`foundation.errors.Conflict`)
and nothing is written. A text written in the folder by hand, which the office's editor
loaded and replaces, is kept first as a version of its own (:data:`FOLDER_WRITER`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from foundation.actor import Actor
from foundation.errors import Conflict, InputError
from foundation.files import write_whole

#: The program's own kinds, in ``defaults/``.
DEFAULTS_DIR = Path(__file__).with_name("defaults")
#: A kind's name: the file's name without ``.html``.
KIND = re.compile(r"^[a-z0-9][a-z0-9-]{0,59}$")
#: The title comment on a template's first line.
TITLE = re.compile(r"^\s*\{#-?\s*title:\s*(.+?)\s*-?#\}")
#: Who wrote a text found in the folder (not saved by the office), as the versions name it.
FOLDER_WRITER = "someone, in the letters folder"
#: The longest template the office accepts [characters].
TEXT_MAX = 100_000


@dataclass(frozen=True)
class Template:
    """One kind's template as it is in force.

    Attributes
    ----------
    kind : str
        ``warning-letter``.
    title : str
        ``Warning letter``.
    text : str
        The template's text.
    source : str
        ``program`` (the program's default) or ``utility`` (the utility's file).
    version : int
        The latest text the office saved of this kind (0: none saved).
    saved_by, saved_at
        Who saved that version and when (None when none was saved).
    changed_at : datetime or None
        When the utility's file last changed (None for the program's).
    has_default : bool
        The program ships a template of this kind.
    """

    kind: str
    title: str
    text: str
    source: str
    version: int = 0
    saved_by: str | None = None
    saved_at: datetime | None = None
    changed_at: datetime | None = None
    has_default: bool = True

    @property
    def sha256(self) -> str:
        return sha256(self.text)

    @property
    def source_words(self) -> str:
        return "the program's" if self.source == "program" else "the utility's"


def sha256(text: str) -> str:
    """The SHA-256 of a template's text (UTF-8), hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def folder(cfg) -> Path | None:
    """The utility's letters folder (``[documents] letters``, relative to the config file's
    folder), or None where the config names none."""
    from lab.documents.pdf import documents_table

    name = documents_table(cfg).letters
    if not name:
        return None
    path = Path(getattr(cfg, "path", "") or "")
    base = path.resolve().parent if path.is_file() else Path.cwd()
    return (base / name).resolve()


def title_of(kind: str, text: str) -> str:
    """The title a template gives itself on its first line, else its kind in words."""
    m = TITLE.match(text.split("\n", 1)[0])
    return m.group(1) if m else kind.replace("-", " ").capitalize()


def check_kind(kind: str) -> str:
    kind = str(kind or "").strip()
    if not KIND.match(kind):
        raise InputError(f"letter kind: {kind!r} is not a kind's name (small letters, digits and hyphens, "
                         "such as warning-letter)")
    return kind


def _program(kind: str) -> str | None:
    p = DEFAULTS_DIR / f"{kind}.html"
    return p.read_text(encoding="utf-8") if p.is_file() else None


def _utility_file(cfg, kind: str) -> Path | None:
    d = folder(cfg)
    if d is None:
        return None
    p = d / f"{kind}.html"
    return p if p.is_file() else None


def _read_utility(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"the letter template {p.name} in the letters folder is not UTF-8 text") from None


def _latest(conn, kind: str) -> tuple[int, str | None, datetime | None, str | None]:
    row = conn.execute("SELECT version, saved_by, saved_at, sha256 FROM letter_template_versions WHERE kind = %s "
                       "ORDER BY version DESC LIMIT 1", (kind,)).fetchone()
    return (row[0], row[1], row[2], row[3]) if row else (0, None, None, None)


def template(conn, cfg, kind: str) -> Template:
    """The template of ``kind`` in force: the utility's file, else the program's.

    Raises
    ------
    InputError
        No such kind (naming the kinds there are).
    """
    kind = check_kind(kind)
    p = _utility_file(cfg, kind)
    default = _program(kind)
    if p is None and default is None:
        raise InputError(f"no kind of letter {kind!r} (kinds: {', '.join(t.kind for t in kinds(conn, cfg))})")
    version, by, at, _ = _latest(conn, kind) if conn is not None else (0, None, None, None)
    if p is not None:
        text = _read_utility(p)
        changed = datetime.fromtimestamp(p.stat().st_mtime, timezone.utc)
        return Template(kind, title_of(kind, text), text, "utility", version, by, at, changed, default is not None)
    return Template(kind, title_of(kind, default), default, "program", version, by, at, None, True)


def kinds(conn, cfg) -> list[Template]:
    """Every kind of letter: the program's and the utility's, by title."""
    names = {p.name[:-5] for p in DEFAULTS_DIR.glob("*.html")}
    d = folder(cfg)
    if d is not None and d.is_dir():
        names |= {p.name[:-5] for p in d.glob("*.html") if KIND.match(p.name[:-5])}
    return sorted((template(conn, cfg, k) for k in names), key=lambda t: t.title.lower())


def program_text(kind: str) -> str | None:
    """The program's own text of ``kind`` (None for a kind of the utility's)."""
    return _program(check_kind(kind))


def versions(conn, kind: str) -> list[dict]:
    """Every text of ``kind`` the office saved, newest first."""
    rows = conn.execute("SELECT version, text, sha256, saved_by, saved_at FROM letter_template_versions "
                        "WHERE kind = %s ORDER BY version DESC", (check_kind(kind),)).fetchall()
    return [dict(zip(("version", "text", "sha256", "saved_by", "saved_at"), r)) for r in rows]


def save(conn, cfg, kind: str, text: str, *, expected_version: int, loaded_sha256: str, actor: Actor) -> Template:
    """Save ``text`` as the utility's template of ``kind`` (a new kind where none is).

    Parameters
    ----------
    expected_version : int
        The version the edit was loaded from (:attr:`Template.version`).
    loaded_sha256 : str
        The SHA-256 of the text the edit was loaded from: a file changed in the folder since
        refuses the save as a version saved by the office does.

    Raises
    ------
    InputError
        No letters folder configured, an empty or too long text, a template that does not
        compile (the line named: :func:`enforcement.letters.rendering.check`).
    Conflict
        Someone saved a newer version, or the file changed in the folder, since the edit began.
    """
    from enforcement.letters.rendering import check

    kind = check_kind(kind)
    d = folder(cfg)
    if d is None:
        raise InputError("no letters folder: the configuration's [documents] letters names none, so a template "
                         "cannot be saved")
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise InputError(f"the letter template {kind}: the text is empty")
    if len(text) > TEXT_MAX:
        raise InputError(f"the letter template {kind}: longer than {TEXT_MAX} characters")
    check(kind, text)
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"letter-template:{kind}",))
    version, by, at, latest_sha = _latest(conn, kind)
    what = f"the letter template {kind}"
    if version != expected_version:
        raise Conflict(what, expected_version, version, by or "someone", at or "an unknown time")
    p = d / f"{kind}.html"
    current = _read_utility(p) if p.is_file() else _program(kind)
    if current is not None and sha256(current) != loaded_sha256:
        changed = datetime.fromtimestamp(p.stat().st_mtime, timezone.utc) if p.is_file() else "an unknown time"
        raise Conflict(what, expected_version, version + 1, FOLDER_WRITER, changed)
    d.mkdir(parents=True, exist_ok=True)
    if p.is_file() and sha256(current) != latest_sha:     # a text written in the folder, kept before it is replaced
        version += 1
        conn.execute("INSERT INTO letter_template_versions (kind, version, text, sha256, saved_by, saved_at) "
                     "VALUES (%s, %s, %s, %s, %s, %s)", (kind, version, current, sha256(current), FOLDER_WRITER,
                                                         datetime.fromtimestamp(p.stat().st_mtime, timezone.utc)))
    new = version + 1
    digest = sha256(text)
    conn.execute("INSERT INTO letter_template_versions (kind, version, text, sha256, saved_by) VALUES (%s, %s, %s, %s, %s)",
                 (kind, new, text, digest, actor.audit_name))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, "letter.template.save", f"letter-template:{kind}",
                  json.dumps({"version": new, "sha256": digest, "previous_sha256": sha256(current) if current else None,
                              "via": actor.via})))
    write_whole(p, text)
    return template(conn, cfg, kind)

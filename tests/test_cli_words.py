"""Every command's ``--help``, as a person reads it, says the utility's words: no
configuration or table keys (snake_case), issue numbers, subscripts, Python exception
names, negative durations or file paths of this checkout (``tests/plain_words.py``). Every
help is also drawn, so a help text argparse cannot format (a bare ``%``) fails here, not at
the user's terminal.

Text that outlives the tracker: no issue number anywhere in the house either (every ``.py``,
template, style sheet, script and README of the packages that ``pyproject.toml`` lists, the
tests and their data, the scripts, the benchmarks, the guide's pages in ``docs/``, ``mkdocs.yml``
and the README): a docstring says what a module owns and why, a commit message says which
issue. Left as they are: the migrations (their checksums are their record), and the shapes the
refusal is defined by and tested on (``tests/plain_words.py`` and this module)."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import plain_words
from tree_files import project_files
from sewerwatch import cli

ROOT = Path(__file__).resolve().parent.parent
#: What the tree test reads: source, templates, styles, scripts, pages, data and READMEs.
TEXT_SUFFIXES = {".py", ".html", ".md", ".css", ".js", ".toml", ".txt", ".yml", ".yaml", ".csv", ".json", ""}
#: Beside the packages, the folders and files the tree test reads.
OTHER_TREES = ("tests", "benchmarks", "scripts", "docs", "mkdocs.yml", "README.md")
#: Where the issue-number shapes must be written out: the pattern's definition and its tests.
PATTERN_FILES = {ROOT / "tests" / "plain_words.py", ROOT / "tests" / "test_cli_words.py"}

#: The shapes refused in help. Command names and the values an option takes (a pack's id,
#: ``industrial-user``) are what a person types, so kebab-case words are not refused; the
#: columns of a file format a person writes are allowed (``plain_words.FORMATS``).
REFUSED = ("subscript", "file path", "exception name", "negative duration", "issue number")


def _parsers(p: argparse.ArgumentParser, path: list[str]):
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _parsers(sub, path + [name])


def test_every_help_is_drawn_and_in_plain_words():
    helps = [(" ".join(path), p.format_help()) for path, p in _parsers(cli.build_parser(), ["sewerwatch"])]
    assert len(helps) > 60
    found = [f"{where}: {hit}" for where, text in helps for hit in plain_words.internal(text, plain_words.FORMATS)
             if hit.startswith(REFUSED) or (hit.startswith("key '") and "_" in hit.split("'")[1])]
    # the default config in the working folder is named as a person types it
    found = [f for f in found if "'./sewerwatch.toml'" not in f]
    assert not found, "\n".join(found)


def test_the_refusal_finds_what_it_looks_for():
    """The checker itself: each refused shape is found (so the test above can fail)."""
    assert plain_words.internal("Maintenance windows (issue 7): while")
    assert plain_words.internal("ENFORCEMENT RESPONSE responses[3], recurrence 1")
    assert plain_words.internal("expired -33 days")
    assert plain_words.internal("ConnectionException: Modbus Error")
    assert plain_words.internal("from examples/permits/plating.toml")
    assert plain_words.internal("state renewal-due") and plain_words.internal("rule cu-daily-max")
    assert not plain_words.internal("a self-monitoring report, issued 2026-03-02, expired 33 days ago")


def _tree() -> list[Path]:
    roots = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["root_packages"]
    files = []
    for top in [*roots, *OTHER_TREES]:
        for f in project_files(ROOT, top):
            if (f.suffix in TEXT_SUFFIXES and "migrations" not in f.parts
                    and "__pycache__" not in f.parts and "previews" not in f.parts and f not in PATTERN_FILES):
                files.append(f)
    return files


def test_no_issue_number_in_the_package_tree():
    files = _tree()
    assert len(files) > 400
    assert {ROOT / "ereport" / "README.md", ROOT / "tests" / "test_layers.py", ROOT / "docs" / "index.md",
            ROOT / "mkdocs.yml"} <= set(files)
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for f in files for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if plain_words.ISSUE.search(line)]
    assert not found, "\n".join(found)


def test_the_issue_number_check_finds_each_shape():
    for text in ("Maintenance windows (issue 26)", "who leads run (issues 15, 20)", "Issue 20: late readings",
                 "see issue #7"):
        assert plain_words.ISSUE.search(text), text
    for text in ("issue the notice", "issued 2026-03-02", "the issue date 2026-04-01", "bills.issue",
                 "Issue 3 bills", "Issue 1 corrected bill", "the clerk drafts and issues 2026Q1"):
        assert not plain_words.ISSUE.search(text), text

"""The cases of a town's local limits, worked out by hand from its words, judged the one way the
ordinance tests share (tests/test_fortville_limits.py, tests/test_sample_type_limits.py,
tests/test_mooresville_limits.py): lab results built in a table of one site, judged by the town's
pack (:func:`lab.checks.compliance.check_lab`), each violation named by its rule, samples and
limit; and the command line run in this process against the test database, in the town's folder.
"""

from __future__ import annotations

import contextlib
import io
import os
from datetime import datetime, timezone
from pathlib import Path

from lab.checks.compliance import check_lab
from lab.results_table import LabTable

UTC = timezone.utc


def table(*rows, site: str = "plater", typed: bool = True) -> LabTable:
    """rows: (sample, 'YYYY-MM-DDTHH:MM' UTC, analyte, mg/l, sample type), all of ``site``;
    ``typed=False`` builds the table without its sample types (every limit judges every result)."""
    cols = list(zip(*rows))
    when = [datetime.fromisoformat(x).replace(tzinfo=UTC) for x in cols[1]]
    return LabTable.from_columns([site] * len(rows), cols[0], when, cols[2], cols[3], [False] * len(rows),
                                 cols[4] if typed else None)


def judged(tb: LabTable, pack: str, permit=None) -> list[tuple[str, list[str], float]]:
    """Each violation of ``tb`` under ``pack`` (and ``permit``): (rule, samples, limit), in the
    order :func:`check_lab` gives them."""
    return [(v["rule"], v["evidence"]["samples"], v["limit"]) for v in check_lab(tb, pack, permit=permit)]


def sewerwatch(folder: Path, db, config: str, *args) -> tuple[int, str, str]:
    """``sewerwatch --config CONFIG ARGS`` in this process, in ``folder``, against ``db`` (the
    environment's other SEWERWATCH_ settings set aside): exit code, stdout, stderr."""
    from sewerwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update({k: v for k, v in saved_env.items() if not k.startswith("SEWERWATCH_")}, SEWERWATCH_DB_URL=db.url)
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(folder / config), *args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()

"""Lab results in the database: import (good rows stored, bad rows to ``dead_letters``),
corrections as new versions (who and when in ``audit_log``), and, asked to, the months the
file's results fall in judged (:func:`lab.store.period_checks.check_db`). Reading them back
is :mod:`lab.store.current`'s.

``lab_results`` is append-only (a trigger refuses UPDATE and DELETE): a correction is a new
version of the (sample, analyte) result; ``lab_results_current`` shows the latest.

The import streams ("Lab import"): the file is read a record at a time
(:class:`lab.readers.labcsv.LabReader`) and stored :data:`CHUNK_ROWS` rows at a time (new
samples in one statement, results by COPY); what the checks against earlier rows of the
file need (a result given twice, a sample at two sites or times) is kept in two temporary
tables, not in memory. A 1,000,000-row file imports with memory that follows one chunk.
"""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg

from foundation.actor import Actor
from lab.ordinance import pack_timezone
from lab.readers.labcsv import BadRow, LabReader, LabRow, check_against_earlier, parse_collected
from lab.sampling.matching import after_import
from lab.store.flow import link_composite

SOURCE = "lab-import"
#: Rows read, checked and stored together: memory follows one chunk, not the file.
CHUNK_ROWS = 5_000

#: What the checks against the earlier rows of the file need, per import (dropped at commit;
#: emptied first when an earlier import ran in the same transaction).
EARLIER_TABLES = """
CREATE TEMP TABLE IF NOT EXISTS lab_import_results (sample_key text, analyte text, line int,
                                                    PRIMARY KEY (sample_key, analyte)) ON COMMIT DROP;
CREATE TEMP TABLE IF NOT EXISTS lab_import_samples (sample_key text PRIMARY KEY, site text, line int,
                                                    collected text) ON COMMIT DROP;
TRUNCATE lab_import_results, lab_import_samples"""
#: a 24-hour composite (palmyra-wi, 003_44f871d49a02d8f5.txt §13.53(3)) without an explicit
#: window covers the 24 hours before its collection time
COMPOSITE_HOURS = 24


@dataclass
class ImportReport:
    file: str
    actor: str
    stored: int = 0
    corrected: int = 0
    unchanged: int = 0  # rows already stored with the same value: a re-import changes nothing
    samples_created: int = 0
    bad: list[BadRow] = field(default_factory=list)
    composites_linked: list[dict] = field(default_factory=list)
    #: a preview: every check was made and nothing was stored
    dry_run: bool = False
    #: the first good rows and what each becomes (``keep_rows`` of :func:`import_lab_file`)
    rows: list[dict] = field(default_factory=list)
    #: ``check``: the months judged (local dates, ``[start, end)``) and what was found in them
    checked: dict | None = None
    #: the sampling events the file's samples matched, its unknown sample ids, the results held
    #: too long (:func:`lab.sampling.matching.after_import`)
    sampling: dict | None = None

    @property
    def good(self) -> int:
        """Rows that can be used (stored, corrected, or already stored as they are)."""
        return self.stored + self.corrected + self.unchanged

    def as_json(self) -> dict:
        return {"file": self.file, "actor": self.actor, "stored": self.stored, "corrected": self.corrected,
                "unchanged": self.unchanged, "samples_created": self.samples_created, "bad": len(self.bad),
                "bad_rows": [{"line": b.line, "reason": b.reason} for b in self.bad],
                "composites_linked": self.composites_linked,
                "complete": not self.bad, "dry_run": self.dry_run, "rows": self.rows,
                **({"checked": self.checked} if self.checked is not None else {}),
                **({"sampling": self.sampling} if self.sampling is not None else {})}


def _extra(row: LabRow, *names: str) -> str | None:
    """An optional column of the lab CSV (``laboratory``, ``method``), or None where empty."""
    for n in names:
        v = (row.extra.get(n) or "").strip()
        if v:
            return v
    return None


def _sample_kind(row: LabRow, tz) -> tuple[str, datetime | None, datetime | None]:
    """Sample type and window from the optional columns ``sample_type``, ``window_start``, ``window_end``."""
    kind = (row.extra.get("sample_type") or row.extra.get("type") or "grab").strip().lower() or "grab"
    if kind not in ("grab", "composite"):
        raise ValueError(f"unknown sample_type '{kind}' (expected grab or composite)")
    if kind == "grab":
        return kind, None, None
    ws, we = (row.extra.get("window_start") or "").strip(), (row.extra.get("window_end") or "").strip()
    start = parse_collected(ws, tz) if ws else None
    end = parse_collected(we, tz) if we else None
    if end is None:
        end = row.collected
    if start is None:
        start = end - timedelta(hours=COMPOSITE_HOURS)
    if end <= start:
        raise ValueError(f"composite window ends ({end.isoformat()}) before it starts ({start.isoformat()})")
    return kind, start, end


#: Who took a sample (``lab_samples.sampled_by``), as the optional column ``sampled_by`` of a lab
#: CSV may say it: the village (the control authority's own sampling, 40 CFR 403.8(f)(2)(v)), the
#: industrial user (its self-monitoring), or a contractor for either. Absent: the user's.
SAMPLED_BY = {"potw": "potw", "village": "potw", "utility": "potw", "user": "user", "self": "user",
              "industrial-user": "user", "potw-contractor": "potw-contractor",
              "village-contractor": "potw-contractor", "user-contractor": "user-contractor"}


def _sampled_by(row: LabRow) -> str:
    v = (row.extra.get("sampled_by") or "").strip().lower()
    if not v:
        return "user"
    if v not in SAMPLED_BY:
        raise ValueError(f"sampled_by: unknown '{v}' (expected village, user, village-contractor or "
                         "user-contractor)")
    return SAMPLED_BY[v]


#: The optional column of the time the laboratory analysed a result (its holding time,
#: :mod:`lab.sampling.methods`), as labs spell it.
ANALYSED = ("analysed_at", "analyzed_at", "analysed", "analyzed")


def _analysed(row: LabRow, now: datetime, tz) -> datetime | None:
    """The optional analysis time of a row: not before the sample was collected, not in the future."""
    text = _extra(row, *ANALYSED)
    if text is None:
        return None
    t = parse_collected(text, tz)
    f = "%Y-%m-%d %H:%M %Z"
    if t < row.collected:
        raise ValueError(f"analysed_at: {t.astimezone(tz).strftime(f)} is before the sample was collected "
                         f"({row.collected.astimezone(tz).strftime(f)})")
    if t > now + CLOCK_SLACK:
        raise ValueError(f"analysed_at: {t.astimezone(tz).strftime(f)} is in the future")
    return t


#: How far ahead of now a collection time may be (a laboratory's clock a little fast) [s].
CLOCK_SLACK = timedelta(minutes=5)


def _dates(row: LabRow, kind: tuple, now: datetime, tz) -> None:
    """Refuse a row whose dates cannot be: collected after now (in the village's time zone
    ``tz``), or a composite whose window ends after the sample was collected (a composite is
    collected when its window closes, or later). A ``ValueError`` naming the column."""
    f = "%Y-%m-%d %H:%M %Z"
    if row.collected > now + CLOCK_SLACK:
        raise ValueError(f"collected: {row.collected.astimezone(tz).strftime(f)} is in the future (it is now "
                         f"{now.astimezone(tz).strftime(f)} in the village): a result is recorded once its sample "
                         "is taken")
    _type, _start, end = kind
    if end is not None and end > row.collected:
        raise ValueError(f"window_end: {end.astimezone(tz).strftime(f)} is after the sample was collected "
                         f"({row.collected.astimezone(tz).strftime(f)}): a composite is collected when its window "
                         "ends, or later")


def import_lab_file(conn, path: str | Path, *, actor: Actor | str | None = None, correct: bool = False,
                    tz=None, now: datetime | None = None, chunk_rows: int = CHUNK_ROWS, data: bytes | None = None,
                    dry_run: bool = False, check: bool = False, keep_rows: int = 0,
                    only_sites: set[str] | None = None, submission: int | None = None) -> ImportReport:
    """Import a lab CSV into ``lab_samples``/``lab_results``; or preview it (``dry_run``).

    Every row is validated (see :func:`lab.readers.labcsv.read_lab_csv`; sites are those of the
    ``sites`` table). Good rows are stored; bad rows are reported with their line numbers
    and kept in ``dead_letters`` (source ``lab-import``, topic ``<file>:<line>``, the raw
    row as payload, bytes that are not text included). A row for a result already stored
    with the same value changes nothing and is counted as ``unchanged`` (importing the same
    file twice is harmless; a row repeated inside one file is a bad row); with another value
    it is refused unless ``correct``, which stores it as a new version and writes who and
    when to ``audit_log``. Composite samples with a flow meter at their site are linked to
    the flow readings of their window. The optional columns ``laboratory`` (or ``lab``) and
    ``method`` are kept with the sample and the result (a notice of violation names the
    laboratory); ``sampled_by`` says who took the sample (:data:`SAMPLED_BY`: ``village``,
    ``user``, ``village-contractor``, ``user-contractor``; default ``user``, self-monitoring).

    Parameters
    ----------
    conn : psycopg.Connection
        Owner-role connection; the import is one transaction: one that fails half-way stores
        nothing (no result, no dead letter).
    path : str or Path
        The file; with ``data``, the name its rows are reported and kept under.
    actor : foundation.actor.Actor or str, optional
        Who imports (default: the login user).
    chunk_rows : int
        Rows checked and stored together.
    data : bytes, optional
        The file's bytes (an upload), instead of reading ``path``.
    dry_run : bool
        A preview (``lab import --dry-run``, the office's upload preview, the portal's): every
        row checked exactly as the import checks it (against the database too: unknown sites,
        results stored with another value), in a transaction that is then rolled back, so
        nothing is stored, not even the dead letters.
    check : bool
        Then judge the calendar months the good rows fall in (local dates of their village)
        against the ordinance and each site's permit and store what is found (``lab check
        --store`` of those months, :func:`lab.store.period_checks.check_db`); in a preview,
        what would be found. ``report.checked`` has the months and the violations of the
        file's sites.
    keep_rows : int
        Keep the first this many good rows in ``report.rows``, each with what it becomes
        (``new``, ``correction``, ``unchanged``).
    only_sites : set of str, optional
        The sites rows may name (an industrial user's own); any other is a bad row.
    submission : int, optional
        The portal submission (its id, ``portal_submissions``) the results came in: the
        samples of the good rows are marked as the industrial user's own
        (``lab_samples.submission_id``; :func:`ereport.record.accept`).

    Returns
    -------
    ImportReport
    """
    path = str(path)
    via = actor.via if isinstance(actor, Actor) else "cli"
    actor = actor.audit_name if isinstance(actor, Actor) else (actor or getpass.getuser())
    site_rows = conn.execute("SELECT key, id, pack FROM sites").fetchall()
    if only_sites is not None:
        site_rows = [r for r in site_rows if r[0] in only_sites]
    sites = {k: i for k, i, _p in site_rows}
    site_tz = None
    if tz is None:  # dates are local to each site's village (its pack's time zone)
        site_tz = {k: pack_timezone(p) for k, _i, p in site_rows}
    from limits.packs import load_pack    # the packs' own analytes ([[analytes]]) are known too
    own = tuple(a for p in sorted({p for _k, _i, p in site_rows if p}) for a in load_pack(p).analytes)
    reader = LabReader(path, sites=set(sites), tz=tz, now=now, site_tz=site_tz, cross_checks=False, analytes=own,
                       data=data)
    report = ImportReport(file=path, actor=actor, dry_run=dry_run)
    job = _Import(conn, path, actor, correct, tz, site_tz, sites, report, keep_rows, now=now)
    with conn.transaction() as tx:
        conn.execute(EARLIER_TABLES)
        chunk: list = []
        for item in reader:
            chunk.append(item)
            if len(chunk) >= chunk_rows:
                job.chunk(chunk)
                chunk = []
        if chunk:
            job.chunk(chunk)
        if submission is not None and job.sample_ids:
            # a user's own results, submitted through the portal: taken by the user or its
            # contractor, never the village's sampling (the state's report counts those apart)
            conn.execute("UPDATE lab_samples SET submission_id = %s, sampled_by = CASE WHEN sampled_by = "
                         "'user-contractor' THEN sampled_by ELSE 'user' END WHERE id = ANY(%s)",
                         (submission, sorted(job.sample_ids)))
        report.sampling = after_import(conn, job.sample_ids, now)
        conn.execute(
            "INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'lab.import', %s, %s)",
            (actor, path, json.dumps({"stored": report.stored, "corrected": report.corrected, "unchanged": report.unchanged,
                                      "bad": len(report.bad), "samples_created": report.samples_created, "via": via})))
        for sid in sorted(job.composites):
            linked = link_composite(conn, sid)
            if linked is not None:
                report.composites_linked.append(linked)
        if check and job.first is not None:
            report.checked = _check_months(conn, job, tz, site_tz)
        if dry_run:
            raise psycopg.Rollback(tx)
    report.bad.sort(key=lambda b: b.line)
    return report


def _check_months(conn, job: "_Import", tz, site_tz) -> dict:
    """``lab check --store`` of the local calendar months the file's good rows fall in."""
    from lab.store.period_checks import check_db

    zone = tz or (site_tz or {}).get(job.first_site) or timezone.utc
    lo, hi = job.first.astimezone(zone), job.last.astimezone(zone)
    start = datetime(lo.year, lo.month, 1, tzinfo=zone)
    nxt = hi.month + 1
    end = datetime(hi.year + (nxt > 12), (nxt - 1) % 12 + 1, 1, tzinfo=zone)
    res = check_db(conn, start, end, store=True)
    mine = set(job.sites_seen)
    return {"start": start.date().isoformat(), "end": end.date().isoformat(),
            "last": (end.date() - timedelta(days=1)).isoformat(), "stored": res["stored"],
            "violations": [v for v in res["violations"] if v["site"] in mine]}


class _Import:
    """One import, a chunk of rows at a time (see :func:`import_lab_file`)."""

    def __init__(self, conn, path, actor, correct, tz, site_tz, sites, report, keep_rows=0, now=None):
        self.conn, self.path, self.actor, self.correct = conn, path, actor, correct
        self.now = now
        self.tz, self.site_tz, self.sites, self.report = tz, site_tz, sites, report
        self.composites: set[int] = set()
        self.keep_rows = keep_rows
        #: the earliest and latest collection of the good rows, and their sites (``check``)
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.first_site: str | None = None
        self.sites_seen: set[str] = set()
        #: the samples of the good rows (``submission``)
        self.sample_ids: set[int] = set()

    def _seen(self, row: LabRow, becomes: str) -> None:
        if self.first is None or row.collected < self.first:
            self.first, self.first_site = row.collected, row.site
        if self.last is None or row.collected > self.last:
            self.last = row.collected
        self.sites_seen.add(row.site)
        if len(self.report.rows) < self.keep_rows:
            self.report.rows.append({"line": row.line, "site": row.site, "sample": row.sample_id,
                                     "collected": row.collected.isoformat(), "analyte": row.analyte,
                                     "value": row.value, "unit": row.unit, "qualifier": row.qualifier,
                                     "mg_l": row.value_mg_l, "becomes": becomes})

    def chunk(self, items: list) -> None:
        bad = [i for i in items if isinstance(i, BadRow)]
        rows = self._against_earlier([i for i in items if isinstance(i, LabRow)], bad)
        kinds = []
        now = self.now or datetime.now(timezone.utc)
        for row in rows:
            try:
                tz = self.tz or (self.site_tz or {}).get(row.site) or timezone.utc
                kind = _sample_kind(row, tz)
                _dates(row, kind, now, tz)
                _sampled_by(row)
                kinds.append((row, *kind, _analysed(row, now, tz)))
            except ValueError as exc:
                bad.append(BadRow(row.line, str(exc), row.raw))
        if kinds:
            self._store(kinds, bad)
        self._dead_letters(bad)

    def _against_earlier(self, rows: list[LabRow], bad: list[BadRow]) -> list[LabRow]:
        """The rows that pass the checks against the earlier rows of the file (kept in the
        temporary tables), recording them there."""
        if not rows:
            return rows
        conn = self.conn
        seen = {(k, a): ln for k, a, ln in conn.execute(
            "SELECT e.sample_key, e.analyte, e.line FROM lab_import_results e "
            "JOIN unnest(%s::text[], %s::text[]) AS k(key, analyte) ON e.sample_key = k.key AND e.analyte = k.analyte",
            ([r.sample_id for r in rows], [r.analyte for r in rows]))}
        samples = {k: (site, ln, datetime.fromisoformat(c)) for k, site, ln, c in conn.execute(
            "SELECT sample_key, site, line, collected FROM lab_import_samples WHERE sample_key = ANY(%s)",
            (list({r.sample_id for r in rows}),))}
        known_seen, known_samples = set(seen), set(samples)
        ok = []
        for row in rows:
            try:
                check_against_earlier(row, seen, samples)
                ok.append(row)
            except ValueError as exc:
                bad.append(BadRow(row.line, str(exc), row.raw))
        with conn.cursor() as cur:
            with cur.copy("COPY lab_import_results (sample_key, analyte, line) FROM STDIN") as cp:
                for (k, a), ln in seen.items():
                    if (k, a) not in known_seen:
                        cp.write_row((k, a, ln))
            with cur.copy("COPY lab_import_samples (sample_key, site, line, collected) FROM STDIN") as cp:
                for k, (site, ln, when) in samples.items():
                    if k not in known_samples:
                        cp.write_row((k, site, ln, when.isoformat()))
        return ok

    def _store(self, kinds: list, bad: list[BadRow]) -> None:
        conn, report, sites = self.conn, self.report, self.sites
        keys = sorted({(sites[r.site], r.sample_id) for r, *_ in kinds})
        existing = {}
        for sid, site_id, key, collected, kind in conn.execute(
                "SELECT s.id, s.site_id, s.sample_key, s.collected, s.sample_type FROM lab_samples s "
                "JOIN unnest(%s::int[], %s::text[]) AS k(site_id, key) "
                "ON s.site_id = k.site_id AND s.sample_key = k.key",
                ([k[0] for k in keys], [k[1] for k in keys])).fetchall():
            existing[(site_id, key)] = (sid, collected, kind)
        # new samples, each as its first row in the file says, in one statement
        first: dict = {}
        for row, kind, wstart, wend, analysed in kinds:
            key = (sites[row.site], row.sample_id)
            if key not in existing and key not in first:
                first[key] = (row.collected, kind, wstart, wend, _extra(row, "laboratory", "lab"), _sampled_by(row))
        if first:
            cols = list(zip(*[(k[1], k[0], *v) for k, v in first.items()]))
            for sid, site_id, key, collected, kind in conn.execute(
                    "INSERT INTO lab_samples (sample_key, site_id, collected, sample_type, window_start, window_end, "
                    "laboratory, sampled_by) SELECT * FROM unnest(%s::text[], %s::int[], %s::timestamptz[], %s::text[], "
                    "%s::timestamptz[], %s::timestamptz[], %s::text[], %s::text[]) RETURNING id, site_id, sample_key, collected, sample_type",
                    [list(c) for c in cols]).fetchall():
                existing[(site_id, key)] = (sid, collected, kind)
            report.samples_created += len(first)
        current = {}
        for sample_id, analyte, version, value, qualifier in conn.execute(
                "SELECT sample_id, analyte, version, value_mg_l, qualifier FROM lab_results_current "
                "WHERE sample_id = ANY(%s)", ([existing[k][0] for k in keys if k in existing],)).fetchall():
            current[(sample_id, analyte)] = (version, value, qualifier)
        results, audits = [], []
        for row, kind, wstart, wend, analysed in kinds:
            sample = existing[(sites[row.site], row.sample_id)]
            if sample[1] != row.collected:
                bad.append(BadRow(row.line, f"sample '{row.sample_id}' is stored as collected "
                                  f"{sample[1].astimezone(timezone.utc).isoformat()}, "
                                  f"this row says {row.collected.isoformat()}", row.raw))
                continue
            sid = sample[0]
            if sample[2] == "composite":
                self.composites.add(sid)
            prev = current.get((sid, row.analyte))
            source = f"{self.path}:{row.line}"
            if prev is None:
                version, reason = 1, None
            else:
                pversion, pvalue, pqual = prev
                if pqual == row.qualifier and abs(pvalue - row.value_mg_l) <= 1e-12 * max(1.0, abs(pvalue)):
                    report.unchanged += 1
                    self.sample_ids.add(sid)
                    self._seen(row, "unchanged")
                    continue
                if not self.correct:
                    bad.append(BadRow(row.line, f"sample '{row.sample_id}' {row.analyte} is stored as "
                                      f"{pqual}{pvalue:g} mg/l (version {pversion}); this row says "
                                      f"{row.qualifier}{row.value_mg_l:g} mg/l: import with --correct "
                                      f"to record a correction", row.raw))
                    continue
                version, reason = pversion + 1, f"correction from {source}"
            results.append((sid, row.analyte, version, row.value_mg_l, row.qualifier, repr(row.value), row.unit,
                            self.actor, reason, source, _extra(row, "method"),
                            analysed))
            current[(sid, row.analyte)] = (version, row.value_mg_l, row.qualifier)
            self.sample_ids.add(sid)
            self._seen(row, "new" if version == 1 else "correction")
            if version == 1:
                report.stored += 1
            else:
                report.corrected += 1
                audits.append((self.actor, f"lab_result:{row.site}/{row.sample_id}/{row.analyte}",
                               json.dumps({"version": version, "previous_version": prev[0],
                                           "previous_mg_l": prev[1], "previous_qualifier": prev[2],
                                           "value_mg_l": row.value_mg_l, "qualifier": row.qualifier,
                                           "source": source})))
        with conn.cursor() as cur:
            if results:
                with cur.copy("COPY lab_results (sample_id, analyte, version, value_mg_l, qualifier, raw_value, "
                              "raw_unit, entered_by, reason, source, method, analysed) FROM STDIN") as cp:
                    for r in results:
                        cp.write_row(r)
            if audits:
                cur.executemany("INSERT INTO audit_log (actor, action, object, detail) "
                                "VALUES (%s, 'lab.correct', %s, %s)", audits)

    def _dead_letters(self, bad: list[BadRow]) -> None:
        """The chunk's bad rows into ``dead_letters`` (in line order); the report keeps line
        and reason only."""
        if not bad:
            return
        bad.sort(key=lambda b: b.line)
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO dead_letters (source, topic, payload, reason, detail) VALUES (%s, %s, %s, %s, %s)",
                [(SOURCE, f"{self.path}:{b.line}", b.payload, b.reason,
                  json.dumps({"file": self.path, "line": b.line, "actor": self.actor})) for b in bad])
        self.report.bad.extend(BadRow(b.line, b.reason, "") for b in bad)

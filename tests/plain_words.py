"""The shapes of our words that must not reach a person: what a page, a document, an e-mail
or a command's ``--help`` shows is read for keys (snake_case, kebab-case identifiers),
subscripts (``responses[3]``), file paths, Python exception names, negative durations and
issue numbers. Words an ordinance or plain English writes with a hyphen are allowed
(:data:`ENGLISH`), and so is what the person typed (the tests' own markers).
"""

from __future__ import annotations

import re

#: Hyphenated words of plain English and of the ordinances' and EPA's own language.
ENGLISH = {
    "self-monitoring", "e-mail", "e-mails", "sign-in", "sign-ins", "sign-out", "follow-up", "follow-ups", "lower-case",
    "non-compliance", "non-domestic", "non-detect", "non-detects", "pump-out", "pump-outs", "re-run", "co-signed",
    "to-do", "up-to-date", "day-to-day", "on-site", "off-site", "in-place", "step-by-step", "long-term",
    "short-term", "one-time", "real-time", "full-time", "part-time", "follow-on", "well-being", "check-in",
    "flow-proportional", "time-proportional", "flow-weighted", "year-to-date", "month-to-date", "point-in-time",
    "end-of-pipe", "pre-treatment", "so-called", "re-sampling", "re-sample", "re-inspection", "re-issued",
    "hand-off", "hand-offs", "set-up", "built-in", "read-only", "high-strength", "low-strength", "24-hour",
    "30-day", "four-month", "six-month", "12-month", "two-factor", "second-factor", "per-pound",
    "cross-connection", "sub-meter", "non-residential", "non-renewal", "non-compliant", "x-axis", "y-axis", "drop-down", "semi-annual",
    "semi-annually", "bi-monthly", "bi-weekly", "multi-day", "same-day", "next-day", "first-hour",
    "tetrachloroethane", "oil-water", "fats-oils-grease", "de-chlorinated", "de-minimis",
}
#: The columns of the file formats a person writes (the lab's CSV), named on the pages that
#: say how to write them.
FORMATS = {"sample_id", "sample_type", "entered_by", "detection_limit", "lab_id", "volume_mg"}
KEBAB = re.compile(r"(?<![\w/.@-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w/@-]|\.\w)")
SNAKE = re.compile(r"(?<![\w/.@])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/@])")
SUBSCRIPT = re.compile(r"\b[A-Za-z_]\w*\[\d+\]")
PATH = re.compile(r"(?<![\w])(?:[\w.-]+/)+[\w.-]+\.(?:toml|py|csv|json|html|sql|txt|md)\b|\b[\w-]+\.py\b")
EXCEPTION = re.compile(r"\b(?:[A-Z][a-z]+)+(?:Error|Exception|Warning)\b|\bTraceback\b|\bErrno\b")
NEGATIVE = re.compile(r"(?<![\w.])-\d+(?:\.\d+)?\s*(?:days?|hours?|minutes?|seconds?|weeks?|months?|years?|[dhms])\b")
#: A tracker's issue number, however written: "issue 26", "(issues 15, 20)", "Issue #7"; not the
#: verb with a count ("Issue 3 bills", the bill run's button) or a quarter ("issues 2026Q1").
ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+(?!\d|Q[1-4]\b|\s+(?:corrected\s+)?bills?\b)")
#: Chemical names and CAS-style numbers of the analyte catalogue written as an ordinance does.
CHEMICAL = re.compile(r"^\d[\d,]*-")


def internal(text: str, allow: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Each internal shape in ``text`` with a little of its context, in reading order."""
    hits = []
    for pattern, what in ((SNAKE, "key"), (KEBAB, "key"), (SUBSCRIPT, "subscript"), (PATH, "file path"),
                          (EXCEPTION, "exception name"), (NEGATIVE, "negative duration"), (ISSUE, "issue number")):
        for m in pattern.finditer(text):
            word = m.group(0)
            if what == "key" and (word in ENGLISH or word in allow or CHEMICAL.match(word)
                                  or _english(word)):
                continue
            a, b = max(0, m.start() - 40), min(len(text), m.end() + 40)
            hits.append(f"{what} {word!r} in …{text[a:b]!r}…")
    return hits


def _english(word: str) -> bool:
    """A hyphenated compound of plain English: each part a word of letters that is not one of
    our abbreviations (``cu-daily``, ``ph-min``), such as 'pre-approved', 'all-day'."""
    if "_" in word:
        return False
    parts = word.split("-")
    return all(p in ENGLISH_PARTS for p in parts)


#: Parts of hyphenated English compounds the office writes ("in-person", "non-compliant").
ENGLISH_PARTS = {"in", "person", "non", "compliant", "pre", "approved", "all", "day", "re", "opened", "co", "signer",
                 "self", "reported", "long", "standing", "well", "known", "over", "due", "under", "way", "one", "two",
                 "three", "four", "five", "six", "seven", "eight", "nine", "ten", "year", "month", "week", "hour",
                 "minute", "old", "new", "first", "second", "third", "last", "next", "late", "early", "end", "start",
                 "high", "low", "mid", "half", "full", "part", "time", "left", "right", "up", "down", "out", "off",
                 "on", "by", "to", "of", "and", "the", "a", "an", "per", "pound", "gallon", "site", "wide", "based",
                 "free", "made", "related", "specific", "level", "like", "type", "taking", "making", "looking"}

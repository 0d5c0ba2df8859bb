"""Lab results as columns of numpy arrays, the form the compliance checks work on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from limits.sample_types import of_result


def to_datetime64(times) -> np.ndarray:
    """Aware datetimes -> ``datetime64[us]`` in UTC."""
    return np.array([t.astimezone(timezone.utc).replace(tzinfo=None) for t in times], dtype="datetime64[us]")


@dataclass(frozen=True)
class LabTable:
    """Lab results, one element per result.

    Attributes
    ----------
    site, sample, analyte : numpy.ndarray of str
    collected : numpy.ndarray of datetime64[us]
        Collection time [UTC].
    value_mg_l : numpy.ndarray of float64
        Result [mg/l]; for a non-detect its detection limit [mg/l].
    non_detect : numpy.ndarray of bool
    sample_type : numpy.ndarray of str or None
        Each result's sample type (``grab``, ``composite``); None where not known (a table
        built without it: every limit judges every result, :mod:`limits.sample_types`).
    """

    site: np.ndarray
    sample: np.ndarray
    collected: np.ndarray
    analyte: np.ndarray
    value_mg_l: np.ndarray
    non_detect: np.ndarray
    sample_type: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.value_mg_l)

    @classmethod
    def from_rows(cls, rows) -> "LabTable":
        """From :class:`lab.readers.labcsv.LabRow` objects (or anything with the same attributes)."""
        rows = list(rows)
        return cls(
            site=np.array([r.site for r in rows], dtype=object),
            sample=np.array([r.sample_id for r in rows], dtype=object),
            collected=to_datetime64([r.collected for r in rows]) if rows else np.array([], dtype="datetime64[us]"),
            analyte=np.array([r.analyte for r in rows], dtype=object),
            value_mg_l=np.array([r.value_mg_l for r in rows], dtype=np.float64),
            non_detect=np.array([r.non_detect for r in rows], dtype=bool),
            sample_type=np.array([of_result(r.extra.get("sample_type") if getattr(r, "extra", None) else None)
                                  for r in rows], dtype=object),
        )

    @classmethod
    def from_columns(cls, site, sample, collected: list[datetime], analyte, value_mg_l, non_detect,
                     sample_type=None) -> "LabTable":
        return cls(np.asarray(site, dtype=object), np.asarray(sample, dtype=object),
                   to_datetime64(collected) if len(collected) else np.array([], dtype="datetime64[us]"),
                   np.asarray(analyte, dtype=object), np.asarray(value_mg_l, dtype=np.float64),
                   np.asarray(non_detect, dtype=bool),
                   None if sample_type is None else np.asarray([of_result(x) for x in sample_type], dtype=object))

    def select(self, mask) -> "LabTable":
        m = np.asarray(mask)
        return LabTable(self.site[m], self.sample[m], self.collected[m], self.analyte[m],
                        self.value_mg_l[m], self.non_detect[m],
                        None if self.sample_type is None else self.sample_type[m])


def iso(t: np.datetime64) -> str:
    """ISO-8601 UTC text of a ``datetime64`` (``2026-01-05T08:00:00Z``)."""
    return str(np.datetime_as_string(t.astype("datetime64[s]"), unit="s")) + "Z"

"""Benchmark: daily volumes from metered flow (lab.composite.bucket_volumes_gal) against pandas.

A quarter of flow readings (one about every 60 s at irregular times, with a few gaps longer
than the 15-minute joining limit) for several flow meters is integrated into the volume of
each calendar day, as ``sewerwatch bill`` and the discharge-permit check do (palmyra-wi,
003_44f871d49a02d8f5.txt §13.54(1)(e): 5,000 gallons a day). The peer, measured in the same
run on the same arrays, is the idiomatic pandas way: insert the midnights into the time
index with time interpolation, take the trapezoid of each segment, and sum by day
(``groupby``), dropping segments across gaps. Both give the same volumes (checked).

Prints, as its last line, ``{"benchmark": ..., "value": ..., "unit": ..., "peer": ...,
"peer_value": ..., "ratio": ...}`` with ratio = sewerwatch throughput / pandas throughput.
``BENCH_QUICK=1`` runs 2 meters x 2 weeks.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from lab.formulas.volumes import bucket_volumes_gal  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
METERS = 2 if QUICK else 10
DAYS = 14 if QUICK else 91
MAX_GAP_S = 900.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def make_meter(rng):
    n = int(DAYS * 1440 * 1.02)
    steps = rng.uniform(50.0, 70.0, n)
    steps[rng.integers(0, n, 5)] = 3600.0  # a few outages longer than the joining limit
    t = T0 + np.cumsum(steps)
    t = t[t < T0 + DAYS * 86400]
    q = rng.gamma(4.0, 25.0, t.size)
    return t, q


def sewerwatch_days(t, q, edges):
    vol, _cov = bucket_volumes_gal(t, q, edges, MAX_GAP_S)
    return vol


def pandas_days(t, q, edges):
    import pandas as pd
    s = pd.Series(q, index=pd.to_datetime(t, unit="s"))
    gap_after = np.append(np.diff(t) > MAX_GAP_S, False)  # segment starting here crosses a gap
    mids = pd.to_datetime(edges, unit="s")
    mids = mids[(mids > s.index[0]) & (mids < s.index[-1])].difference(s.index)
    full = s.reindex(s.index.union(mids)).interpolate(method="time")
    g = pd.Series(gap_after, index=s.index).reindex(full.index).ffill().astype(bool)
    ts = full.index.asi8 / 1e9
    area = (full.values[:-1] + full.values[1:]) / 2.0 * np.diff(ts) / 60.0
    area = pd.Series(np.where(g.values[:-1], 0.0, area), index=full.index[:-1])
    by_day = area.groupby(area.index.floor("D")).sum()
    out = np.zeros(len(edges) - 1)
    idx = ((by_day.index.asi8 / 1e9 - edges[0]) // 86400).astype(int)
    out[idx] = by_day.values
    return out


def main() -> None:
    rng = np.random.default_rng(7)
    meters = [make_meter(rng) for _ in range(METERS)]
    edges = T0 + 86400.0 * np.arange(DAYS + 1)
    n = sum(t.size for t, _ in meters)

    def run(fn):
        best, res = float("inf"), None
        for _ in range(3):
            t0 = time.perf_counter()
            res = [fn(t, q, edges) for t, q in meters]
            best = min(best, time.perf_counter() - t0)
        return best, res

    sw_s, sw = run(sewerwatch_days)
    pd_s, pdv = run(pandas_days)
    for a, b in zip(sw, pdv):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-6)
    value, peer = n / sw_s, n / pd_s
    print(f"{METERS} meters x {DAYS} days, {n:,} readings: sewerwatch {sw_s * 1e3:.1f} ms, pandas {pd_s * 1e3:.1f} ms")
    print(json.dumps({"benchmark": "lab-daily-volumes", "value": round(value), "unit": "readings/s",
                      "peer": "pandas interpolate+groupby", "peer_value": round(peer),
                      "ratio": round(value / peer, 2)}))


if __name__ == "__main__":
    main()

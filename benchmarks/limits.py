"""Benchmark: the limits core against the same rules written idiomatically with pandas.

10 million readings of 1,000 sensors (500 pH, 500 flow; one reading about every minute at
irregular times, sorted by sensor then time as the database returns them) are evaluated with
palmyra-wi's continuous rules: pH lower than 6.0 / higher than 9.0 (§13.48(2)(g)) and the
slug, more than 5 x the trailing 24-hour time-weighted average for longer than 15 minutes
(§13.43), the average taken "during normal operation", i.e. leaving out the readings
that are themselves above the slug line. The peer, measured in the same run on the same
arrays, is pandas: groupby + shift/cumsum for episodes and groupby + rolling('24h') for the
time-weighted average, repeated until the readings above the line no longer change (the
line depends on the average, which depends on the readings above it; two or three
passes).
Both work through the data in chunks of whole sensors (sewerwatch its default 500 k
readings, pandas 1 M) so memory stays bounded.

A second figure compares the range check (the ordinance comparison with NaN and quality
handled) with a bare numpy comparison of the same values; a third, the readings CSV reader
of ``sewerwatch check`` (1 M rows) with pandas.read_csv + to_datetime on the same file.

Prints, as its last line, ``{"benchmark": ..., "value": ..., "unit": ..., "peer": ...,
"peer_value": ..., "ratio": ...}`` with ratio = sewerwatch throughput / pandas throughput.
``BENCH_QUICK=1`` runs 100 sensors x 2,000 readings.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from limits import core  # noqa: E402
from limits.evaluator import SensorMeta, evaluate  # noqa: E402
from limits.packs import load_pack  # noqa: E402

QUICK = os.environ.get("BENCH_QUICK") == "1"
N_SENSORS = 100 if QUICK else 1000
PER_SENSOR = 2_000 if QUICK else 10_000
GAP_MULTIPLE = 3.0
CHUNK = 1_000_000


def make_data(seed=42):
    """Readings sorted by sensor then time: even codes pH, odd codes flow."""
    rng = np.random.default_rng(seed)
    n = N_SENSORS * PER_SENSOR
    sensor = np.repeat(np.arange(N_SENSORS, dtype=np.int64), PER_SENSOR)
    steps = rng.integers(50, 71, size=(N_SENSORS, PER_SENSOR)).astype(np.int64) * core.US
    t0 = 1_772_344_800 * core.US
    time_ = (t0 + np.cumsum(steps, axis=1)).ravel()
    del steps
    value = np.empty(n)
    is_ph = (sensor % 2) == 0
    value[is_ph] = rng.normal(7.5, 0.55, size=int(is_ph.sum()))
    flow = rng.gamma(4.0, 25.0, size=int((~is_ph).sum()))
    # slug-like events: a few per flow sensor, 5-40 readings at 6-9x the usual flow
    fi = np.flatnonzero(~is_ph)
    n_ev = (N_SENSORS // 2) * max(1, PER_SENSOR // 1500)
    at = rng.integers(0, len(fi) - 40, n_ev)
    for a, L, m in zip(at, rng.integers(5, 40, n_ev), rng.uniform(6, 9, n_ev)):
        flow[a:a + L] = 100.0 * m
    value[~is_ph] = flow
    value[rng.random(n) < 0.002] = np.nan
    quality = (rng.random(n) < 0.001).astype(np.int16) * 2
    return sensor, time_, value, quality


def chunks(sensor):
    starts = np.flatnonzero(np.r_[True, sensor[1:] != sensor[:-1]])
    bounds = np.append(starts, len(sensor))
    per = max(1, CHUNK // PER_SENSOR)
    for a in range(0, len(starts), per):
        yield bounds[a], bounds[min(a + per, len(starts))]


def run_sewerwatch(pack, data, meta):
    sensor, time_, value, quality = data
    return evaluate(pack, sensor, time_, value, quality, meta=meta, gap_multiple=GAP_MULTIPLE)


def run_pandas(data, gap_s=GAP_MULTIPLE * 60.0):
    """The same rules, written the way a pandas user would."""
    import pandas as pd

    sensor, time_, value, quality = data
    counts = {"ph-min": 0, "ph-max": 0, "slug": 0}
    for a, b in chunks(sensor):
        df = pd.DataFrame({"sensor": sensor[a:b], "time": pd.to_datetime(time_[a:b], unit="us"),
                           "value": value[a:b], "quality": quality[a:b]})
        df = df[df["value"].notna() & (df["quality"] == 0)]
        df["gap"] = df.groupby("sensor")["time"].diff().dt.total_seconds()
        df["brk"] = df["gap"].isna() | (df["gap"] > gap_s)

        def episodes(frame, flag, agg):
            start = flag & (~flag.shift(fill_value=False) | frame["brk"])
            run_id = start.cumsum()
            return frame[flag].groupby(run_id[flag]).agg(**agg)

        ph = df[df["sensor"] % 2 == 0]
        counts["ph-min"] += len(episodes(ph, ph["value"] < 6.0,
                                         {"start": ("time", "first"), "last": ("time", "last"),
                                          "peak": ("value", "min")}))
        counts["ph-max"] += len(episodes(ph, ph["value"] > 9.0,
                                         {"start": ("time", "first"), "last": ("time", "last"),
                                          "peak": ("value", "max")}))
        fl = df[df["sensor"] % 2 == 1].copy()
        hold = (-fl.groupby("sensor")["time"].diff(-1).dt.total_seconds()).clip(upper=gap_s).fillna(0)
        first = fl.groupby("sensor")["time"].transform("first")
        eligible = ((fl["time"] - first) >= pd.Timedelta(hours=24)).to_numpy()
        # the baseline "during normal operation" leaves out readings above the slug line,
        # which depends on the baseline: recompute until the readings above stay the same
        above = np.zeros(len(fl), dtype=bool)
        while True:
            keep = ~above
            fl["vdt"] = fl["value"] * hold * keep
            fl["hold"] = hold * keep
            roll = (fl.groupby("sensor").rolling("24h", on="time", closed="left")[["vdt", "hold"]].sum()
                    .reset_index(drop=True))
            avg = (roll["vdt"] / roll["hold"]).to_numpy()
            threshold = np.where(eligible, 5.0 * avg, np.nan)
            now_above = fl["value"].to_numpy() > threshold
            if (now_above == above).all():
                break
            above = now_above
        fl["threshold"] = threshold
        flag = fl["value"] > fl["threshold"]
        nxt = fl.groupby("sensor")["time"].shift(-1)
        fl["next"] = nxt.where(~fl["brk"].shift(-1, fill_value=True), fl["time"])
        ep = episodes(fl, flag, {"start": ("time", "first"), "end": ("next", "last"),
                                 "peak": ("value", "max")})
        counts["slug"] += int(((ep["end"] - ep["start"]) > pd.Timedelta(minutes=15)).sum())
    return counts


def csv_figures(n_rows):
    """Readings CSV of ``sewerwatch check``: our reader vs pandas.read_csv + to_datetime."""
    import tempfile

    import pandas as pd

    from limits.csvio import read_readings_csv

    rng = np.random.default_rng(1)
    t0 = np.datetime64("2026-03-01T00:00:00")
    idx = np.arange(n_rows)
    times = np.datetime_as_string(t0 + (idx // 100) * np.timedelta64(60, "s"), unit="s")
    site = idx % 50
    ph = (idx // 50) % 2 == 0
    vals = np.where(ph, rng.normal(7.5, 1.0, n_rows), rng.gamma(2, 50, n_rows))
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("time,site,parameter,value,unit\n")
        f.write("\n".join(f"{a}-06:00,s{b},{'ph' if p else 'flow'},{c:.3f},{'pH' if p else 'gpm'}"
                          for a, b, p, c in zip(times.tolist(), site.tolist(), ph.tolist(), vals.tolist())))
        f.write("\n")
        path = f.name
    try:
        ours, tab = timed(read_readings_csv, path, repeat=2)

        def with_pandas():
            df = pd.read_csv(path)
            df["time"] = pd.to_datetime(df["time"], utc=True, format="ISO8601")
            return df

        theirs, df = timed(with_pandas, repeat=2)
        assert len(tab.time) == len(df) == n_rows
        utc = df["time"].dt.tz_localize(None).to_numpy().astype("datetime64[us]").astype(np.int64)
        assert (tab.time == utc).all()
    finally:
        os.unlink(path)
    return n_rows / ours, n_rows / theirs


def timed(fn, *args, repeat=1):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    pack = load_pack("palmyra-wi")
    rules = pack.continuous_rules()
    t = time.perf_counter()
    data = make_data()
    n = len(data[0])
    meta = {c: SensorMeta("ph" if c % 2 == 0 else "flow", 60.0) for c in range(N_SENSORS)}
    print(f"data: {n:,} readings, {N_SENSORS} sensors ({time.perf_counter() - t:.1f} s to generate)",
          file=sys.stderr)

    sw_s, eps = timed(run_sewerwatch, pack, data, meta, repeat=3)
    ids = np.array([r.id for r in rules])[eps["rule"]]
    sw_counts = {k: int((ids == k).sum()) for k in ("ph-min", "ph-max", "slug")}
    pd_s, pd_counts = timed(run_pandas, data, repeat=2)
    print(f"sewerwatch: {sw_s:.2f} s, {n / sw_s / 1e6:.1f} M readings/s, episodes {sw_counts}", file=sys.stderr)
    print(f"pandas:     {pd_s:.2f} s, {n / pd_s / 1e6:.1f} M readings/s, episodes {pd_counts}", file=sys.stderr)
    if sw_counts != pd_counts:
        print("WARNING: sewerwatch and pandas found different episodes", file=sys.stderr)

    # range check: the ordinance comparison with NaN and quality handled, vs a bare compare
    value, quality = data[2], data[3]
    reps = 5
    bare_s, _ = timed(lambda: value < 6.0, repeat=reps)
    rc_s, _ = timed(lambda: core.exceeds(value, 6.0, "<") & (quality == 0), repeat=reps)
    print(f"range check: {n / rc_s / 1e6:.0f} M readings/s vs bare numpy comparison "
          f"{n / bare_s / 1e6:.0f} M readings/s (ratio {bare_s / rc_s:.2f})", file=sys.stderr)
    csv_ours, csv_pandas = csv_figures(100_000 if QUICK else 1_000_000)
    print(f"readings CSV: {csv_ours / 1e6:.2f} M rows/s vs pandas.read_csv + to_datetime "
          f"{csv_pandas / 1e6:.2f} M rows/s", file=sys.stderr)
    print(json.dumps({"benchmark": "limits range+slug evaluation (palmyra-wi), "
                      f"{n:,} readings, {N_SENSORS} sensors",
                      "value": round(n / sw_s), "unit": "readings/s",
                      "peer": "pandas groupby+rolling", "peer_value": round(n / pd_s),
                      "ratio": round(pd_s / sw_s, 2),
                      "range_check_readings_per_s": round(n / rc_s),
                      "bare_numpy_compare_readings_per_s": round(n / bare_s),
                      "range_check_vs_bare": round(bare_s / rc_s, 2),
                      "csv_rows_per_s": round(csv_ours), "pandas_read_csv_rows_per_s": round(csv_pandas)}))


if __name__ == "__main__":
    main()

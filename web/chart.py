"""Readings drawn as server-rendered SVG: the range's envelope (each
bucket's lowest and highest reading) and its middle, the limits as labelled lines, the
violation episodes shaded, maintenance windows hatched grey; local times on the axis. No script, no library: it prints on
paper and scales to a phone (``viewBox``, width 100 %).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np

from web import formats

#: The drawing's size in SVG user units (it scales to its box).
WIDTH, HEIGHT = 760, 240
PAD_L, PAD_R, PAD_T, PAD_B = 58, 14, 14, 34
#: Buckets across the plot: one per two user units, finer than a phone's pixels.
BUCKETS = 360


@dataclass
class Series:
    """One sensor's readings of a range, bucketed: bucket starts [epoch s] with the lowest,
    highest and count of usable readings in each (NaN where none)."""

    t: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n: np.ndarray
    unit: str
    limits: list = field(default_factory=list)      # (value, label)
    episodes: list = field(default_factory=list)    # (start, end or None) [epoch s]
    maintenance: list = field(default_factory=list)  # maintenance windows (start, end) [epoch s]


def _ticks(t0: float, t1: float, tz: str) -> list[tuple[float, str]]:
    """Local-time ticks: hours for a day, days for longer ranges."""
    span = t1 - t0
    z = ZoneInfo(tz)
    step_h = next((h for h in (1, 2, 3, 6, 12, 24, 48, 24 * 7) if span / (h * 3600) <= 8), 24 * 14)
    start = datetime.fromtimestamp(t0, z).replace(minute=0, second=0, microsecond=0)
    if step_h >= 24:
        start = start.replace(hour=0)
    out = []
    cur = start
    while cur.timestamp() <= t1:
        ts = cur.timestamp()
        if ts >= t0:
            out.append((ts, cur.strftime("%a %d" if step_h >= 24 else "%H:%M")))
        cur = (cur + timedelta(hours=step_h)).astimezone(z)
        if step_h < 24:
            cur = cur.replace(minute=0)
    return out


def _nice(lo: float, hi: float) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / 4
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def svg(s: Series, t0: float, t1: float, tz: str, title: str) -> str:
    """The SVG of one series between ``t0`` and ``t1`` [epoch s]; its text is escaped."""
    from markupsafe import escape

    good = np.isfinite(s.lo) & np.isfinite(s.hi)
    values = np.concatenate([s.lo[good], s.hi[good]]) if good.any() else np.array([])
    ys = list(values) + [v for v, _ in s.limits]
    if ys:
        lo, hi = float(np.min(ys)), float(np.max(ys))
    else:
        lo, hi = 0.0, 1.0
    pad = (hi - lo) * 0.08 or max(abs(hi) * 0.1, 1.0)
    lo, hi = lo - pad, hi + pad
    pw, ph = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def x(t):
        return PAD_L + (t - t0) / (t1 - t0) * pw

    def y(v):
        return PAD_T + (hi - v) / (hi - lo) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" role="img" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
             f'<rect x="{PAD_L}" y="{PAD_T}" width="{pw}" height="{ph}" class="plot"/>']
    for a, b in s.episodes:
        xa, xb = x(max(a, t0)), x(min(b if b is not None else t1, t1))
        if xb > xa - 0.5:
            parts.append(f'<rect x="{xa:.1f}" y="{PAD_T}" width="{max(xb - xa, 1.5):.1f}" height="{ph}" class="episode">'
                         f'<title>violation episode from {escape(formats.local(a, tz))}</title></rect>')
    for a, b in s.maintenance:       # readings in a window are not judged
        xa, xb = x(max(a, t0)), x(min(b, t1))
        if xb > xa - 0.5:
            parts.append(f'<rect x="{xa:.1f}" y="{PAD_T}" width="{max(xb - xa, 1.5):.1f}" height="{ph}" '
                         f'class="maintenance"><title>maintenance window from {escape(formats.local(a, tz))}: '
                         f'readings not judged</title></rect>')
    for v in _nice(lo, hi):
        parts.append(f'<line x1="{PAD_L}" x2="{PAD_L + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                     f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" class="ylabel">{escape(formats.num(v))}</text>')
    for t, label in _ticks(t0, t1, tz):
        parts.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{PAD_T}" y2="{PAD_T + ph}" class="grid"/>'
                     f'<text x="{x(t):.1f}" y="{HEIGHT - PAD_B + 16}" class="xlabel">{escape(label)}</text>')
    # the envelope and its middle, broken where a bucket has no reading
    runs, cur = [], []
    for i in range(len(s.t)):
        if good[i]:
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    width_t = (s.t[1] - s.t[0]) if len(s.t) > 1 else (t1 - t0) / BUCKETS
    for run in runs:
        top = " ".join(f"{x(s.t[i] + width_t / 2):.1f},{y(s.hi[i]):.1f}" for i in run)
        bottom = " ".join(f"{x(s.t[i] + width_t / 2):.1f},{y(s.lo[i]):.1f}" for i in reversed(run))
        parts.append(f'<polygon points="{top} {bottom}" class="band"/>')
        mid = " ".join(f"{x(s.t[i] + width_t / 2):.1f},{y((s.lo[i] + s.hi[i]) / 2):.1f}" for i in run)
        parts.append(f'<polyline points="{mid}" class="line"/>')
    for v, label in s.limits:
        ly = y(v) - 5 if y(v) - PAD_T > 16 else y(v) + 14      # the label above its line, below it at the top
        parts.append(f'<line x1="{PAD_L}" x2="{PAD_L + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="limit"/>'
                     f'<text x="{PAD_L + pw - 4}" y="{ly:.1f}" class="limitlabel">{escape(label)}</text>')
    if not runs:
        parts.append(f'<text x="{PAD_L + pw / 2}" y="{PAD_T + ph / 2}" class="empty">no readings in this range</text>')
    parts.append(f'<text x="6" y="{PAD_T + 10}" class="unit">{escape(formats.unit(s.unit))}</text></svg>')
    return "".join(parts)

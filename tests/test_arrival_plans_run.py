"""Any arrival, the same judgement: arrival plans through the real broker into a real ``run``.

The in-process property (``tests/test_arrival_plans.py``) plays many plans with a simulated
receive clock; this one plays fewer, the whole way: each plan's readings are published by a
device account to the real Mosquitto, taken by one real ``sewerwatch run`` (a subprocess on
the real TimescaleDB), stored, judged live and alerted. A plan: one or two episodes of pH 2
in a minute of pH 7 (one reading a second by the stamps, measured in the minutes before the
plan is played), a clock offset from -2 h to +20 s applied from a random reading on,
permutations within windows, batches of 1-60, some readings sent twice, and for some plans a
restart of ``run`` between two batches. Once every reading is stored, within
:data:`SETTLE_S` the site's ``violations`` rows equal what ``sewerwatch check --from --to``
finds over the stored readings (rule and start exactly, the end within a second; an episode
with no reading after it stays open live, where ``check`` ends it at its last), and its
alerts count one episode for each. Stamps ahead of the clock beyond ``max_future_s`` wait
for it (minutes of real time): that part of the range is played in simulated time by the
in-process property only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support import close_all, count, mqtt_client, publish_all, sensors_toml, wait_until

ROOT = Path(__file__).resolve().parent.parent
N = 60                   # readings of a plan, one a second by their stamps
SITES = 12               # sites configured for the run (one per example, shrinking included)
SETTLE_S = 20.0          # the bound [s] after the last reading is stored (1 s on a quiet machine; CI is loaded)

pytestmark = [pytest.mark.services, pytest.mark.slow]


def _sw(cfg, *args, env, timeout=120):
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


class _Run:
    """One ``sewerwatch run`` for the module's examples, on a village of :data:`SITES` sites."""

    def __init__(self):
        self.proc = self.err = self.pub = None
        self.sites = iter(range(SITES))

    def start(self, db, services, folder: Path) -> None:
        if self.proc is not None:
            return
        self.u = uuid.uuid4().hex[:6]
        self.folder, self.db = folder, db
        text = (f'[utility]\nname = "Arrival village"\npack = "palmyra-wi"\ntimezone = "America/Chicago"\n'
                f'[services]\ndb_url = "{db.url}"\nmqtt_url = "{services.mqtt_urls["collector"]}"\n'
                f'state_dir = "{folder / "state"}"\n'
                f'[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\nhold_off_s = 600\n'
                f'no_data_after_s = 3600\n')
        for k in range(SITES):
            s = f"arr{k}-{self.u}"
            text += f'[[sites]]\nid = "{s}"\nname = "{s}"\n' + sensors_toml(s, {"ph": ("ph", "pH")}) + "interval_s = 1.0\n"
        self.cfg = folder / "village.toml"
        self.cfg.write_text(text)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
        mig = _sw(self.cfg, "db", "migrate", env=self.env)
        assert mig.returncode == 0, mig.stderr
        self.launch()
        self.pub = mqtt_client(services.mqtt_urls["device"], f"pub-{self.u}")

    def launch(self) -> None:
        self.err = open(self.folder / "run.err", "a")
        mark = (self.folder / "run.err").stat().st_size
        self.proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(self.cfg), "run", "--quiet",
                                      "--client-id", f"test-{self.u}"], stdout=subprocess.DEVNULL, stderr=self.err,
                                     cwd=ROOT, env=self.env)
        assert wait_until(lambda: "subscribed" in (self.folder / "run.err").read_text()[mark:], 60), \
            (self.folder / "run.err").read_text()[-3000:]

    def restart(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(60) == 0, (self.folder / "run.err").read_text()[-3000:]
        self.err.close()
        self.launch()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(60)
        close_all(self.pub, self.err)


@pytest.fixture(scope="module")
def rig():
    r = _Run()
    yield r
    r.stop()


@st.composite
def plans(draw):
    return {
        "starts": draw(st.lists(st.integers(2, N - 16), min_size=1, max_size=2)),
        "step_at": draw(st.integers(0, N - 1)),
        "offset_s": draw(st.sampled_from([0.0, -7200.0, -3600.0, -61.0, -5.0, 20.0]) | st.floats(-7200.0, 20.0)),
        "window": draw(st.integers(1, 8)),
        "seed": draw(st.integers(0, 2**31 - 1)),
        "batch": draw(st.integers(1, 60)),
        "dups": draw(st.integers(0, 5)),
        "restart_at": draw(st.none() | st.integers(1, 6)),
    }


def _arrivals(plan, t, v):
    """The readings in the order and batches they are published in."""
    rng = np.random.default_rng(plan["seed"])
    stamps = t.copy()
    stamps[plan["step_at"]:] += int(plan["offset_s"] * 1e6)
    order = np.arange(N)
    w = plan["window"]
    for a in range(0, N, w):
        rng.shuffle(order[a:a + w])
    if plan["dups"]:
        order = np.concatenate([order, rng.choice(N, plan["dups"])])
    return [(stamps[order[a:a + plan["batch"]]], v[order[a:a + plan["batch"]]])
            for a in range(0, len(order), plan["batch"])], stamps


@settings(max_examples=3, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# a logger flushing its buffer, its clock an hour behind from its first reading, all at once
@example(plan={"starts": [10], "step_at": 0, "offset_s": -3600.0, "window": 1, "seed": 0, "batch": 60, "dups": 0,
               "restart_at": None})
# the clock steps back an hour mid-stream, readings one by one, ``run`` restarted on the way
@example(plan={"starts": [30], "step_at": 20, "offset_s": -3600.0, "window": 1, "seed": 0, "batch": 1, "dups": 0,
               "restart_at": 25})
# two episodes reordered within windows of five, in batches of seven, some sent twice
@example(plan={"starts": [5, 40], "step_at": 50, "offset_s": -61.0, "window": 5, "seed": 3, "batch": 7, "dups": 4,
               "restart_at": 3})
# found by this test on a loaded machine: the clock steps back an hour inside the first episode,
# readings permuted within windows of eight, some twice, run restarted after the fourth batch
@example(plan={"starts": [10, 26], "step_at": 16, "offset_s": -3600.0, "window": 8, "seed": 5595, "batch": 8,
               "dups": 4, "restart_at": 4})
# a clock an hour behind from its first reading, ``run`` restarted inside the episode: the new
# run's warm-up must reach the sensor's own newest readings, an hour before its window
@example(plan={"starts": [10], "step_at": 0, "offset_s": -3600.0, "window": 1, "seed": 0, "batch": 4, "dups": 0,
               "restart_at": 3})
@given(plan=plans())
def test_any_arrival_plan_through_the_broker_into_run_ends_as_check_does(db, services, tmp_path_factory, rig, plan):
    rig.start(db, services, tmp_path_factory.mktemp("arrivals"))
    site = f"arr{next(rig.sites)}-{rig.u}"
    topic = f"sewerwatch/{site}/ph"
    # measured over the minute before now, a reading a second; pH 2 for 12 s at each start
    k = np.arange(N)
    v = 7.0 + 0.01 * (k % 5)
    for a in plan["starts"]:
        v[a:a + 12] = 2.0
    t = (int((time.time() - N - 25) * 1e6) + k * 1_000_000).astype(np.int64)
    batches, stamps = _arrivals(plan, t, v)
    for j, (bt, bv) in enumerate(batches):
        if plan["restart_at"] == j:
            rig.restart()
        publish_all(rig.pub, [(topic, json.dumps({"t": int(x // 1000), "v": float(y), "u": "pH"}))
                              for x, y in zip(bt.tolist(), bv.tolist())])
        time.sleep(0.1)
    stored_sql = ("SELECT count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON "
                  "t.id = s.site_id WHERE t.key = %s")
    # every reading stored, however late: up to a minute on a loaded machine. (Once a plan's
    # readings never all arrived: the first plan was published when ``run`` had asked for its
    # subscription, not when the broker had granted it; ``run`` now says "subscribed" only then.)
    expected = len(np.unique(stamps // 1000))
    assert wait_until(lambda: count(db.url, stored_sql, (site,)) == expected, 60), \
        (plan, count(db.url, stored_sql, (site,)), expected)

    frm = datetime.fromtimestamp(time.time() - 3 * 3600, timezone.utc).isoformat()
    to = datetime.fromtimestamp(time.time() + 600, timezone.utc).isoformat()
    out = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--from", frm, "--to", to, "--db-url", db.url,
                          "--json", "--quiet", "--site", site], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    want = sorted((r["rule"], round(_t(r["start"]), 3), _t(r["end"])) for r in json.loads(out.stdout) if r["site"] == site)
    assert want, (plan, "check found no episode")

    def live():
        with psycopg.connect(db.url) as conn:
            rows = conn.execute(
                "SELECT v.rule, v.start_time, v.end_time FROM violations v JOIN sites t ON t.id = v.site_id "
                "WHERE t.key = %s AND v.source = 'stream' ORDER BY v.start_time", (site,)).fetchall()
            episodes = conn.execute(
                "SELECT coalesce(sum(a.episodes), 0) FROM alerts a JOIN sites t ON t.id = a.site_id "
                "WHERE t.key = %s AND a.kind = 'violation'", (site,)).fetchone()[0]
        return [(r, round(a.timestamp(), 3), None if b is None else b.timestamp()) for r, a, b in rows], episodes

    def agrees():
        rows, episodes = live()
        if [(r, a) for r, a, _ in rows] != [(r, a) for r, a, _ in want] or episodes != len(want):
            return False
        newest = float(stamps.max()) / 1e6
        return all((b is None and abs(wb - newest) <= 1.0) or (b is not None and abs(b - wb) <= 1.0)
                   for (_, _, b), (_, _, wb) in zip(rows, want))
    if not wait_until(agrees, SETTLE_S, step=0.2):
        rows, episodes = live()
        pytest.fail(f"plan {plan}: live rows {rows} and {episodes} alerted episodes, check finds {want} "
                    f"({SETTLE_S:g} s after the last reading was stored)", pytrace=False)


def _t(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


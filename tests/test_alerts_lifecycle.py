"""The alert lifecycle against a real database with an injected clock: one alert per
episode, the hold-off, escalation once, sensor-health alerts, the digest; the config keys."""

from __future__ import annotations

import asyncio
import io
import json

import numpy as np
import psycopg
import pytest

from alerts.channels import ConsoleChannel, Route
from alerts.content import violation_message
from alerts.episodes import LiveEpisodes, sensors_from_db
from alerts.health import HealthWatch
from alerts.manager import AlertManager
from foundation import config as sw_config
from foundation.errors import ConfigError
from support import add_site_and_sensors

T0 = 1_780_290_000_000_000          # 2026-06-01 05:00 UTC [us]
MIN = 60_000_000


class Clock:
    def __init__(self, t=1_800_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def _cfg(**alerts):
    return sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                                "alerts": {"digest_at": False, **alerts}}, "<test>")


def _world(db):
    ids = add_site_and_sensors(db.url, "plant", {"ph": ("ph", "pH")})
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sensors SET interval_s = 60")
        sensors = sensors_from_db(conn)
        sites = {k: (i, n) for i, k, n in conn.execute("SELECT id, key, name FROM sites")}
    return ids["ph"], LiveEpisodes(sensors), sites


def _push(ev, sid, start_min, values):
    n = len(values)
    t = T0 + (start_min + np.arange(n)) * MIN
    return ev.push(np.full(n, sid), t, np.asarray(values, float), np.zeros(n, np.int16))


def _rows(db, sql, params=()):
    with psycopg.connect(db.url) as conn:
        return conn.execute(sql, params).fetchall()


def test_one_alert_per_episode_hold_off_continues_then_resolves(db):
    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(hold_off_s=300.0, escalate_after_min=60.0)

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 7.1, 4.0, 3.9, 4.2]))        # opens (still open)
        await m.idle()
        assert len(m.active) == 1
        await m.on_episodes(*_push(ev, sid, 5, [7.0, 7.2]))                       # closes
        clock.t += 200
        await m.tick()
        assert len(m.active) == 1                                                 # within the hold-off
        await m.on_episodes(*_push(ev, sid, 7, [5.5, 5.0, 7.0]))                  # a new episode: continues
        clock.t += 299
        await m.tick()
        assert len(m.active) == 1
        clock.t += 2
        await m.tick()                                                            # hold-off over: resolved
        assert len(m.active) == 0
        await m.on_episodes(*_push(ev, sid, 10, [2.0, 7.0]))                       # after resolution: new alert
        await m.idle()
        await m.close()
        return m.stats

    stats = asyncio.run(scenario())
    alerts = _rows(db, "SELECT id, state, episodes, rule FROM alerts ORDER BY id")
    assert [(a[1], a[2], a[3]) for a in alerts] == [("resolved", 2, "ph-min"), ("open", 1, "ph-min")] or \
        [(a[1], a[2], a[3]) for a in alerts] == [("resolved", 2, "ph-min"), ("notified", 1, "ph-min")]
    viol = _rows(db, "SELECT start_time, end_time, peak FROM violations ORDER BY start_time")
    assert len(viol) == 3 and all(v[1] is not None for v in viol)
    assert [v[2] for v in viol] == [3.9, 5.0, 2.0]
    text = out.getvalue()
    assert text.count("VIOLATION #1") == 1 and text.count("RESOLVED #1") == 1 and text.count("VIOLATION #2") == 1
    assert "VIOLATION CONTINUES" not in text
    assert stats["opened"] == 2 and stats["resolved"] == 1
    actions = [r[0] for r in _rows(db, "SELECT action FROM audit_log WHERE object = 'alert:1' ORDER BY id")]
    assert actions == ["alert-open", "notification-sent", "alert-notified", "alert-episode-ended",
                       "alert-episode-continued", "alert-episode-ended", "alert-resolved", "notification-sent"]


def test_escalation_fires_once_and_not_after_acknowledgement(db):
    sid, ev, sites = _world(db)
    clock, out, esc = Clock(), io.StringIO(), io.StringIO()
    cfg = _cfg(hold_off_s=300.0, escalate_after_min=10.0)

    class Second(ConsoleChannel):
        kind = "apprise"
        contact = "second"

    routes = [Route(ConsoleChannel(out)), Route(Second(esc), escalation=True)]

    async def scenario():
        m = await AlertManager(cfg, db.url, routes, sites, clock=clock).start()
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 3.0]))
        await m.on_episodes(*_push(ev, sid, 2, [3.0, 3.1]))
        await m.idle()
        clock.t += 599
        await m.tick()
        await m.idle()
        assert esc.getvalue() == ""
        clock.t += 2
        await m.tick()
        clock.t += 1000
        await m.tick()
        await m.idle()
        # a second sensor episode (another rule would be another alert) acknowledged in time
        await m.on_episodes(*_push(ev, sid, 4, [9.5]))                       # ph-max opens
        await m.idle()
        aid = max(a.id for a in m.active.values())
        with psycopg.connect(db.url) as conn:
            conn.execute("UPDATE alerts SET acknowledged_at = now(), acknowledged_by = 'Pat', state = 'acknowledged' "
                         "WHERE id = %s", (aid,))
        clock.t += 2
        await m.tick()                                                       # sees the acknowledgement
        clock.t += 3600
        await m.tick()
        await m.idle()
        await m.close()

    asyncio.run(scenario())
    assert esc.getvalue().count("[sewerwatch] ESCALATED") == 1 and "ESCALATED (unacknowledged) #1" in esc.getvalue()
    assert "#2" not in esc.getvalue()
    rows = {r[0]: r[1:] for r in _rows(db, "SELECT id, state, escalated_at IS NOT NULL FROM alerts")}
    # #1 escalated, then resolved after its episode ended (the resolution goes to both lists)
    assert rows == {1: ("resolved", True), 2: ("acknowledged", False)}
    assert "RESOLVED #1" in esc.getvalue()
    notes = _rows(db, "SELECT alert_id, event, contact, status FROM alert_notifications ORDER BY id")
    assert (1, "escalate", "second", "sent") in notes and (1, "escalate", "console", "sent") in notes
    assert not any(n[0] == 2 and n[1] == "escalate" for n in notes)


def test_health_watch_no_data_and_flatline():
    h = HealthWatch([1, 2, 3], no_data_after_s=60, flatline_after_s=600, now=1000.0)
    t = T0 + np.arange(20) * MIN
    # sensor 1 varies, sensor 2 is flat for 19 minutes, sensor 3 never reports
    s = np.r_[np.full(20, 1), np.full(20, 2)]
    v = np.r_[np.linspace(7, 8, 20), np.full(20, 7.25)]
    v[20] = 7.0                                       # sensor 2 changed at its first reading only... then flat
    h.observe(s, np.r_[t, t], v, np.zeros(40, np.int16), now=1010.0)
    p = h.problems(1050.0)
    assert set(p) == {("flatline", 2)}
    assert p[("flatline", 2)]["since"] == pytest.approx((T0 + MIN) / 1e6)
    p = h.problems(1065.0)                            # sensor 3 silent since the start (1000)
    assert set(p) == {("flatline", 2), ("no-data", 3)}
    # sensor 2 changes: the flat line ends; readings arriving out of order count once
    h.observe(np.array([2, 2]), np.array([T0 + 21 * MIN, T0 + 20 * MIN]), np.array([7.3, 7.25]),
              np.zeros(2, np.int16), now=1066.0)
    assert set(h.problems(1066.0)) == {("no-data", 3)}
    assert set(h.problems(1200.0)) == {("no-data", 1), ("no-data", 2), ("no-data", 3)}


def test_sensor_health_alert_opens_and_resolves(db):
    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(hold_off_s=30.0, escalate_after_min=60.0)
    names = {sid: ("plant", "ph", sites["plant"][0])}

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        await m.on_health({("no-data", sid): {"since": clock.t - 900, "detail": "no reading for 900 s"}}, names)
        await m.on_health({("no-data", sid): {"since": clock.t - 900, "detail": "no reading for 901 s"}}, names)
        await m.idle()
        assert len(m.active) == 1
        await m.on_health({}, names)                     # data is back
        clock.t += 31
        await m.tick()
        await m.on_health({("device-unreachable", "plant-mh1"): {"site": "plant", "since": clock.t,
                                                                "detail": "connection refused"}}, names)
        await m.idle()
        await m.close()

    asyncio.run(scenario())
    rows = _rows(db, "SELECT kind, rule, state, sensor_id, device FROM alerts ORDER BY id")
    assert rows[0] == ("sensor-health", "no-data", "resolved", sid, None)
    assert rows[1][:2] == ("sensor-health", "device-unreachable") and rows[1][4] == "plant-mh1"
    assert len(rows) == 2
    text = out.getvalue()
    assert "SENSOR HEALTH VIOLATION #1" in text and "no data" in text and "plant-mh1: device unreachable" in text


def test_slug_message_has_the_discharge_report_and_average():
    v = {"site": "candy", "sensor": "flow", "parameter": "flow", "rule": "slug", "kind": "slug",
         "start": "2026-06-02T15:00:00Z", "end": None, "peak": 612.0, "limit": 500.0, "unit": "gpm",
         "comparison": "exceeds", "citation": "003_44f871d49a02d8f5.txt §13.43", "words": "Slug load ...",
         "pack": "palmyra-wi", "average": 100.0, "multiple": 5.0}
    title, body = violation_message(7, "open", v, site_name="Sweet Creek", tz="America/Chicago")
    assert "#7" in title and "Sweet Creek" in title and "612 gpm" in title
    assert "2026-06-02 10:00:00 CDT" in body
    assert "more than 5 x the 24-hour average (100 gpm)" in body
    assert "a slug discharge" in body
    for field in ("Location of discharge", "Date and time thereof", "Type of waste", "Concentration and volume",
                  "Corrective actions"):
        assert field in body
    _, resolved = violation_message(7, "resolve", {**v, "end": "2026-06-02T15:30:00Z"}, site_name="Sweet Creek",
                                    tz="America/Chicago")
    assert "Corrective actions" not in resolved and "Ended:       2026-06-02 10:30:00 CDT" in resolved


def test_digest_lists_the_days_alerts(db, monkeypatch, capsys):
    from sewerwatch import cli

    add_site_and_sensors(db.url, "plant", {"ph": ("ph", "pH")})
    with psycopg.connect(db.url) as conn:
        for opened, resolved, summary in [("2026-06-01 09:00-05", "2026-06-01 10:00-05", "first"),
                                          ("2026-05-31 23:00-05", None, "still open"),
                                          ("2026-05-30 09:00-05", "2026-05-30 10:00-05", "old"),
                                          ("2026-06-02 00:30-05", None, "next day")]:
            conn.execute("INSERT INTO alerts (kind, rule, state, summary, opened_at, resolved_at) VALUES "
                         "('violation', 'ph-min', %s, %s, %s, %s)",
                         ("resolved" if resolved else "open", summary, opened, resolved))
    monkeypatch.setenv("SEWERWATCH_DB_URL", db.url)
    assert cli.main(["alerts", "digest", "--day", "2026-06-01"]) == 0
    out = capsys.readouterr().out
    assert "2 alerts" in out and "first" in out and "still open" in out and "old" not in out and "next day" not in out
    assert cli.main(["alerts", "digest", "--day", "June 1"]) == 2
    assert "--day: expected a date such as 2026-07-31" in capsys.readouterr().err
    assert cli.main(["alerts", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["summary"] for r in listed} == {"still open", "next day"}
    assert cli.main(["alerts", "ack", "999", "--by", "Pat"]) == 2
    assert "no alert #999" in capsys.readouterr().err


@pytest.mark.parametrize("key,value,message", [
    ("digest_at", "7am", "alerts.digest_at: expected a local time HH:MM"),
    ("retry_attempts", 0, "alerts.retry_attempts: expected an integer from 1 to 20"),
    ("no_data_after_s", -5, "alerts.no_data_after_s: expected a positive number"),
    ("console", "yes", "alerts.console: expected true or false"),
    ("readings_url", "grafana/d/x", "alerts.readings_url: expected a URL starting with http://"),
])
def test_alert_config_keys_are_validated(key, value, message):
    with pytest.raises(ConfigError) as e:
        sw_config.from_dict({"alerts": {key: value}}, "village.toml")
    assert str(e.value).startswith("village.toml: " + message)


def test_alert_config_defaults_and_values():
    o = sw_config.from_dict({}, "x").alert_options
    assert (o.console, o.mqtt, o.no_data_after_s, o.flatline_after_s, o.retry_attempts, o.digest_at) == \
        (True, True, 900.0, 3600.0, 5, "07:00")
    o = sw_config.from_dict({"alerts": {"digest_at": False, "retry_backoff_s": 0.5}}, "x").alert_options
    assert o.digest_at is None and o.retry_backoff_s == 0.5


def test_redact_hides_passwords_and_queries():
    from alerts.channels import redact

    assert redact("mailto://127.0.0.1:8025?from=a@b.example&to=c@d.example") == "mailto://127.0.0.1:8025"
    assert redact("json://user:secret@hooks.example:8080/a/b?x=1") == "json://user:***@hooks.example:8080/a/b"
    assert "secret" not in redact("mailtos://me:secret@smtp.example?to=x@y.example")


def test_a_dropped_database_connection_is_reopened_and_nothing_is_lost(db, services):
    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(hold_off_s=300.0, escalate_after_min=60.0)

    def drop_connections():
        with services.admin() as conn:
            return conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                "WHERE datname = %s AND pid <> pg_backend_pid()", (db.name,)).fetchone()[0]

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        assert drop_connections() >= 1
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 3.0]))          # reconnects, records, notifies
        await m.idle()
        assert drop_connections() >= 1
        await m.on_episodes(*_push(ev, sid, 2, [7.0]))                # the episode ends
        clock.t += 301
        await m.tick()
        await m.idle()
        await m.close()

    asyncio.run(scenario())
    assert _rows(db, "SELECT state, episodes FROM alerts") == [("resolved", 1)]
    assert _rows(db, "SELECT count(*) FROM violations WHERE end_time IS NOT NULL") == [(1,)]
    assert "VIOLATION #1" in out.getvalue() and "RESOLVED #1" in out.getvalue()


def test_an_episode_the_database_refuses_is_notified_at_once_kept_and_retried(db, caplog):
    """Alerts never wait for the database: refused (or unreachable), the alert still goes
    out at once, once, with the number taken ahead (a manager running has some at hand; the
    message without one, ``#pending``, is tests/test_live_db_down.py's); its rows are
    written under that number when the database takes them."""
    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(hold_off_s=300.0, escalate_after_min=60.0)
    with psycopg.connect(db.url) as conn:
        conn.execute("ALTER TABLE alerts ADD CONSTRAINT refuse_all CHECK (false) NOT VALID")

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        for _ in range(200):                      # numbers taken ahead, as in a manager running
            if m.outbox.status()["numbers_ahead"]:
                break
            await asyncio.sleep(0.05)
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 3.0]))
        await m.tick()
        await asyncio.sleep(0.3)
        told = [a.id for a in m.active.values()]
        assert len(m.outbox) >= 1 and len(told) == 1 and told[0] is not None
        assert out.getvalue().count(f"VIOLATION #{told[0]}:") == 1
        with psycopg.connect(db.url) as conn:
            conn.execute("ALTER TABLE alerts DROP CONSTRAINT refuse_all")
        clock.t += 1
        await m.tick()
        await m.idle()
        assert len(m.outbox) == 0 and all(a.id is not None for a in m.active.values())
        await m.close()
        return told[0]

    told = asyncio.run(scenario())
    assert "ALERT NOT YET RECORDED" in caplog.text
    assert _rows(db, "SELECT id, state, rule FROM alerts") == [(told, "notified", "ph-min")]
    assert out.getvalue().count("VIOLATION #") == 1
    assert _rows(db, "SELECT count(*) FROM alert_notifications n JOIN alerts a ON a.id = n.alert_id "
                     "WHERE n.status = 'sent'") == [(1,)]


def test_daily_digest_is_sent_once_after_its_time(db):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    sid, ev, sites = _world(db)
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO alerts (kind, rule, state, summary, opened_at) VALUES "
                     "('violation', 'ph-min', 'open', 'yesterday''s acid dump', '2026-06-01 10:30-05')")
    before = datetime(2026, 6, 2, 6, 59, tzinfo=ZoneInfo("America/Chicago")).timestamp()
    clock, out = Clock(before), io.StringIO()
    cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                               "alerts": {"digest_at": "07:00"}}, "<test>")

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        await m.tick()
        await m.idle()
        assert "Daily digest" not in out.getvalue()          # not 07:00 yet
        clock.t += 120
        await m.tick()
        await m.idle()
        clock.t += 60
        await m.tick()                                       # already sent today
        await m.idle()
        await m.close()

    asyncio.run(scenario())
    text = out.getvalue()
    assert text.count("[sewerwatch] Daily digest 2026-06-01: 1 alert ") == 1 and "yesterday's acid dump" in text
    assert _rows(db, "SELECT object FROM audit_log WHERE action = 'digest-sent'") == [("digest:2026-06-01",)]
    assert _rows(db, "SELECT alert_id, event, status, subject FROM alert_notifications WHERE event = 'digest'") == \
        [(None, "digest", "sent", "digest:2026-06-01")]
    # the alert left open by "an earlier run" is tracked again: unacknowledged for a day, it escalates
    assert _rows(db, "SELECT event FROM alert_notifications WHERE alert_id = 1") == [("escalate",)]
    assert "ESCALATED (unacknowledged) #1: yesterday's acid dump" in text


def test_an_episode_seen_again_after_a_restart_is_not_alerted_twice(db):
    """At-least-once delivery: after a restart the broker redelivers readings whose episode
    was alerted already. The episode is the same violation; it gets no second alert."""
    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(hold_off_s=10.0, escalate_after_min=60.0)

    async def scenario():
        m = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 4.0, 3.9, 7.0]))   # opens and closes
        clock.t += 11
        await m.tick()                                                 # resolved
        await m.idle()
        await m.close()
        # a new run: a fresh evaluator sees the same readings again
        _, ev2, _ = _world_again(db)
        m2 = await AlertManager(cfg, db.url, [Route(ConsoleChannel(out))], sites, clock=clock).start()
        await m2.on_episodes(*_push(ev2, sid, 0, [7.0, 4.0, 3.9, 7.0]))
        clock.t += 11
        await m2.tick()
        await m2.idle()
        assert len(m2.active) == 0
        await m2.close()

    asyncio.run(scenario())
    assert _rows(db, "SELECT count(*) FROM alerts")[0][0] == 1
    assert _rows(db, "SELECT count(*) FROM violations")[0][0] == 1
    assert out.getvalue().count("VIOLATION #") == 1
    assert _rows(db, "SELECT count(*) FROM audit_log WHERE action = 'alert-episode-seen-again'")[0][0] == 1


def _world_again(db):
    with psycopg.connect(db.url) as conn:
        sensors = sensors_from_db(conn)
    return None, LiveEpisodes(sensors), None


def test_apprise_channels_do_not_queue_behind_apprises_throttle():
    """apprise waits 5.5 s between two sends of one plugin by default; an escalation must
    not wait behind the alert it escalates (failures are retried by the manager)."""
    from alerts.channels import AppriseChannel

    ch = AppriseChannel("mailto://127.0.0.1:8025?from=a@b.example&to=c@d.example", "x")
    plugins = list(ch._apprise)
    assert plugins and all(p.request_rate_per_sec == 0 for p in plugins)


def test_a_send_that_times_out_itself_keeps_its_reason_and_a_silent_one_is_given_up(db):
    """A channel whose own connection times out (TimeoutError from the send) is recorded with
    that reason; one that does not answer within the manager's send timeout is given up with
    "no answer from the service"."""
    import time

    sid, ev, sites = _world(db)
    clock, out = Clock(), io.StringIO()
    cfg = _cfg(retry_attempts=1)

    class TimesOut(ConsoleChannel):
        contact = "times out"

        def send(self, title, body, payload):
            raise TimeoutError("timed out")

    class Silent(ConsoleChannel):
        contact = "silent"

        def send(self, title, body, payload):
            time.sleep(1.5)

    routes = [Route(TimesOut(io.StringIO())), Route(Silent(io.StringIO())), Route(ConsoleChannel(out))]

    async def scenario():
        m = await AlertManager(cfg, db.url, routes, sites, clock=clock).start()
        m.send_timeout_s = 0.3
        await m.on_episodes(*_push(ev, sid, 0, [7.0, 3.0]))
        await m.idle()
        await m.close()

    asyncio.run(scenario())
    errors = dict(_rows(db, "SELECT contact, error FROM alert_notifications WHERE status = 'failed'"))
    assert errors == {"times out": "the notification could not be sent: timed out",
                      "silent": "no answer from the service within 0.3 s"}
    assert "VIOLATION #1" in out.getvalue()

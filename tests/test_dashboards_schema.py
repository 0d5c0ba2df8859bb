"""The generated dashboards against Grafana's own JSON schemas.

The schemas are the grafana-foundation-sdk's (build 1769699241) in
``<repo>/../shared/grafana-jsonschema``; CI copies ``shared/`` beside the clone.
"""

from __future__ import annotations

import copy

import pytest

from dashboards import validate
from dashboards.definitions import build_all

pytestmark = pytest.mark.skipif(
    not (validate.SCHEMA_DIR / "dashboard.jsonschema.json").is_file(),
    reason=f"Grafana's JSON schemas are not at {validate.SCHEMA_DIR} (shared/ is not beside the checkout)")


@pytest.fixture(scope="module")
def dashboards():
    return [d.to_json() for d in build_all()]


def test_every_dashboard_and_panel_validates(dashboards):
    assert [d["uid"] for d in dashboards] == [
        "sewerwatch-overview", "sewerwatch-site", "sewerwatch-lab", "sewerwatch-sensor-health"]
    for d in dashboards:
        assert validate.errors(d) == [], d["uid"]
        assert d["panels"], d["uid"]


def test_the_validator_catches_what_the_schema_forbids(dashboards):
    bad = copy.deepcopy(dashboards[0])
    bad["panels"][0]["gridPos"]["w"] = 30          # Grafana's grid is 24 wide
    assert any("gridPos/w" in e for e in validate.errors(bad))
    bad = copy.deepcopy(dashboards[0])
    bad["panels"][0]["options"]["style"] = "old"   # the Grafana 10.1 SDK's field
    assert any("options" in e and "style" in e for e in validate.errors(bad))
    bad = copy.deepcopy(dashboards[1])
    del bad["panels"][0]["options"]["legend"]      # timeseries options need a legend
    assert any("legend" in e for e in validate.errors(bad))
    bad = copy.deepcopy(dashboards[0])
    bad["panels"][0]["type"] = "piechart"
    assert any("no schema" in e for e in validate.errors(bad))


def test_panels_fit_the_grid_without_overlap(dashboards):
    for d in dashboards:
        cells = set()
        for p in d["panels"]:
            g = p["gridPos"]
            assert g["x"] + g["w"] <= 24, p["title"]
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & mine, f"{d['uid']}: {p['title']} overlaps another panel"
            cells |= mine


def test_every_target_uses_the_provisioned_datasource_and_raw_sql(dashboards):
    for d in dashboards:
        for p in d["panels"]:
            for t in p["targets"]:
                assert t["datasource"] == {"type": "grafana-postgresql-datasource", "uid": "sewerwatch-timescaledb"}
                assert t["rawQuery"] is True and t["format"] in ("time_series", "table")
                if t["format"] == "time_series":
                    assert "AS \"time\"" in t["rawSql"] or "$__timeGroupAlias" in t["rawSql"], p["title"]


def test_site_variable_on_every_dashboard_but_the_overview(dashboards):
    by_uid = {d["uid"]: d for d in dashboards}
    assert by_uid["sewerwatch-overview"]["templating"]["list"] == []
    site = by_uid["sewerwatch-site"]["templating"]["list"][0]
    assert (site["name"], site["type"], site["multi"]) == ("site", "query", False)
    for uid in ("sewerwatch-lab", "sewerwatch-sensor-health"):
        var = by_uid[uid]["templating"]["list"][0]
        assert (var["name"], var["multi"], var["includeAll"]) == ("site", True, True)
        for p in by_uid[uid]["panels"]:
            for t in p["targets"]:
                # a multi-value variable expands to a quoted list: only IN (...) fits it
                assert "'$site'" not in t["rawSql"]

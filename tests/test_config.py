"""The utility's TOML config: the demo file loads; every error names file, key and problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from foundation import config
from foundation.errors import ConfigError
from ingest.modbus.options import Options as ModbusOptions

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-village.toml"


def test_demo_config_describes_three_industrial_users():
    cfg = config.load(DEMO)
    assert [s.id for s in cfg.sites] == ["sausage", "plating", "candy"]
    assert {s.pack for s in cfg.sites} == {"palmyra-wi"}
    assert cfg.site("plating").sic == "3471"
    candy_ph = next(s for s in cfg.sensors if s.key == "candy/ph")
    assert candy_ph.topic == "sewerwatch/candy/ph" and candy_ph.source == "mqtt"
    plating_ph = next(s for s in cfg.sensors if s.key == "plating/ph")
    assert plating_ph.address == "modbus:plating-mh1/ph"
    assert [c.escalation for c in cfg.contacts] == [False, True]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "village.toml"
    p.write_text(text)
    return p


SITE = '[[sites]]\nid = "a"\nname = "A"\n'


@pytest.mark.parametrize("text, key, problem", [
    ('[utility]\nnmae = "x"\n', "utility.nmae", "unknown key"),
    ('[utility]\npack = "atlantis-wi"\n', "utility.pack", "unknown rule pack 'atlantis-wi'"),
    ('[utility]\ntimezone = "Mars/Olympus"\n', "utility.timezone", "unknown time zone"),
    ('[services]\ndb_url = "mysql://x"\n', "services.db_url", "postgresql://"),
    ('[services]\npg_port = 80\n', "services.pg_port", "from 1024 to 65535"),
    ('[[sites]]\nid = "a"\n', "sites[0].name", "missing (required)"),
    ('[[sites]]\nid = "A B"\nname = "x"\n', "sites[0].id", "lowercase id"),
    (SITE + 'sic = 2013\n', "sites[0].sic", "4-digit SIC code as a string"),
    (SITE + '[[sites]]\nid = "a"\nname = "B"\n', "sites[1]", "duplicate site id 'a'"),
    (SITE + '[[sensors]]\nsite = "b"\nname = "ph"\nparameter = "ph"\nunit = "pH"\nsource = "mqtt"\n',
     "sensors[0].site", "unknown site 'b'"),
    (SITE + '[[sensors]]\nsite = "a"\nname = "t"\nparameter = "temperature"\nunit = "kelvin"\nsource = "mqtt"\n',
     "sensors[0].unit", "unknown unit 'kelvin' for temperature"),
    (SITE + '[[sensors]]\nsite = "a"\nname = "t"\nparameter = "salinity"\nunit = "psu"\nsource = "mqtt"\n',
     "sensors[0].parameter", "expected one of"),
    (SITE + '[[sensors]]\nsite = "a"\nname = "f"\nparameter = "flow"\nunit = "gpm"\nsource = "modbus"\n',
     "sensors[0].device", "required for a modbus sensor"),
    (SITE + '[[sensors]]\nsite = "a"\nname = "f"\nparameter = "flow"\nunit = "gpm"\nsource = "modbus"\ndevice = "nope"\n',
     "sensors[0].device", "unknown device 'nope'"),
    (SITE + '[[devices]]\nid = "d"\nsite = "a"\nunit_id = 300\n', "devices[0].unit_id", "from 0 to 247"),
    ('[alerts]\nescalate_after_min = -5\n', "alerts.escalate_after_min", "positive number"),
    ('[[alerts.contacts]]\nname = "x"\nurls = []\n', "alerts.contacts[0].urls", "non-empty list"),
    ('sites = 3\n', "sites", "array of tables"),
    ('[modbus]\ntimeout_s = -1\n', "modbus.timeout_s", "positive number"),
    ('[modbus]\npoll_hz = 2\n', "modbus.poll_hz", "unknown key"),
    ('[mqtt]\ntopics = ["sewerwatch/+/{sensor}"]\n', "mqtt.topics", "exactly one {site} and one {sensor}"),
    ('[mqtt]\nqos = 2\n', "mqtt.qos", "unknown key"),
])
def test_config_errors_name_file_key_and_problem(tmp_path, text, key, problem):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        # the config keeps [modbus] as data; the collector validates it (as `config check` does)
        ModbusOptions.from_config(config.load(path))
    assert err.value.key == key
    assert problem in err.value.problem
    assert str(err.value).startswith(f"{path}: {key}: ")


def test_invalid_toml_names_the_file_and_line(tmp_path):
    path = _write(tmp_path, '[utility]\nname = "x\n')
    with pytest.raises(ConfigError, match=r"village.toml: not valid TOML: .*line 2"):
        config.load(path)


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        config.load(tmp_path / "absent.toml")


def test_environment_overrides_services(tmp_path, monkeypatch):
    monkeypatch.setenv("SEWERWATCH_DB_URL", "postgresql://u:p@db.invalid:5432/x")
    monkeypatch.setenv("SEWERWATCH_MQTT_PORT", "41883")
    cfg = config.load(_write(tmp_path, SITE))
    assert cfg.services.db_url == "postgresql://u:p@db.invalid:5432/x"
    assert cfg.services.mqtt_port == 41883


def test_cli_reports_a_config_error_on_one_line_with_exit_2(tmp_path):
    path = _write(tmp_path, SITE + 'sic = "20x3"\n')
    proc = subprocess.run([sys.executable, "-m", "sewerwatch", "config", "check", str(path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"sewerwatch: error: {path}: sites[0].sic: expected a 4-digit SIC code as a string, got '20x3'"]


def test_collector_sections_reach_the_collectors(tmp_path):
    cfg = config.load(_write(tmp_path, '[modbus]\ntimeout_s = 0.25\nmax_fill = 0\n'
                                       '[mqtt]\ntopics = ["sewerwatch/{site}/probes/{sensor}"]\n'))
    modbus = ModbusOptions.from_config(cfg)
    assert (modbus.timeout_s, modbus.max_fill) == (0.25, 0)
    assert cfg.mqtt_topics == ("sewerwatch/{site}/probes/{sensor}",)
    default = config.load(_write(tmp_path, SITE))
    assert default.modbus == {} and ModbusOptions.from_config(default) == ModbusOptions()
    assert default.mqtt_topics == ("sewerwatch/{site}/{sensor}",)

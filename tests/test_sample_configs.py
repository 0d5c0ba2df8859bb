"""Every shipped config loads: the demo village, each collector's sample (Telegraf's rule:
a collector folder holds its code, a sample config and a README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from foundation import config

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "ingest").glob("*/sample.toml"))


def test_every_collector_folder_has_a_sample_config_and_a_readme():
    folders = [p for p in (ROOT / "ingest").iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {f.name for f in folders} >= {"modbus", "mqtt"}
    for f in folders:
        assert (f / "sample.toml").is_file(), f"{f} has no sample.toml"
        assert (f / "README.md").is_file(), f"{f} has no README.md"


@pytest.mark.parametrize("path", SAMPLES + [ROOT / "examples" / "demo-village.toml"], ids=lambda p: p.parent.name)
def test_sample_config_loads(path):
    cfg = config.load(path)
    assert cfg.sites and cfg.sensors
    for s in cfg.sensors:
        assert s.site in {site.id for site in cfg.sites}

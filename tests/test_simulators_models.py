"""Device models (simulators/models.py): flume hydraulics, realism, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from simulators import models

T0 = 1_780_290_000.0  # 2026-06-01, a fixed epoch


def test_parshall_free_flow_table_values():
    # USBR Water Measurement Manual ch. 8 free-flow equations: 6-in flume Q = 2.06 Ha^1.58; 1-ft Q = 4.00 Ha^1.522
    assert models.parshall_flow_cfs(1.0, 6) == pytest.approx(2.06)
    assert models.parshall_flow_cfs(0.5, 6) == pytest.approx(2.06 * 0.5 ** 1.58)
    assert models.parshall_flow_cfs(2.0, 12) == pytest.approx(4.0 * 2.0 ** 1.522)
    # the 1-8 ft rows follow C = 4 W, n = 1.522 W^0.026
    for w_in in (12, 18, 24, 36, 48, 60, 72, 84, 96):
        c, n = models.PARSHALL_FREE_FLOW[w_in]
        w = w_in / 12
        assert c == pytest.approx(4 * w)
        assert n == pytest.approx(1.522 * w ** 0.026, abs=6e-4)
    assert models.parshall_flow_cfs(-0.1, 3) == 0.0


@pytest.mark.parametrize("throat", sorted(models.PARSHALL_FREE_FLOW))
def test_parshall_head_inverts_flow(throat):
    q = np.linspace(0.01, 5.0, 50)
    np.testing.assert_allclose(models.parshall_flow_cfs(models.parshall_head_ft(q, throat), throat), q, rtol=1e-12)


def test_flume_meter_noise_is_on_the_level():
    t = T0 + np.arange(3600.0)
    flow = np.full((1, t.size), 200.0)
    level, measured = models.flume_meter(1, flow, t, [0], throat_in=6)
    head = models.parshall_head_ft(200.0 / models.GPM_PER_CFS, 6)
    assert abs(level.mean() - head) < 0.001
    assert 0.0025 < level.std() < 0.0035            # the level sensor's 0.003 ft
    np.testing.assert_allclose(measured, models.parshall_flow_cfs(level, 6) * models.GPM_PER_CFS)


def test_diurnal_flow_pattern():
    t = T0 + np.arange(0, 86400, 60.0)
    f = models.diurnal_factor(t, utc_offset_s=-5 * 3600)[0]
    assert f.mean() == pytest.approx(1.0, abs=1e-9)
    hours = ((t - 5 * 3600) / 3600) % 24
    assert f[(hours > 2) & (hours < 5)].max() < 0.7 < 1.2 < f[(hours > 11) & (hours < 15)].min()
    flow = models.true_flow_gpm(3, T0, t, np.arange(20), 120.0, -5 * 3600)
    assert flow.shape == (20, t.size)
    assert 80 < flow.mean() < 160 and (flow > 0).all()
    assert (flow.max(axis=1) / flow.min(axis=1) > 2).all()   # a real day/night swing per device


def test_counter_based_noise_is_independent_of_sampling():
    t = T0 + np.arange(0, 7200, 1.0)
    every = models.normal(9, np.arange(5), models.CH_PH, models.seconds(t))
    coarse = models.normal(9, [3], models.CH_PH, models.seconds(t[::60]))
    np.testing.assert_array_equal(every[3, ::60], coarse[0])
    assert abs(every.mean()) < 0.03 and every.std() == pytest.approx(1.0, abs=0.03)
    assert not np.array_equal(models.normal(10, [3], models.CH_PH, models.seconds(t))[0], every[3])


def test_ph_and_temperature_models():
    t = T0 + np.arange(0, 86400 * 10, 600.0)
    dev = np.arange(30)
    ph = models.ph_probe(2, models.true_ph(2, T0, t, dev), t, dev)
    assert 6.0 < ph.min() and ph.max() < 8.6
    assert 6.9 < ph.mean() < 7.7
    temp = models.true_temperature_degf(2, T0, t, dev, 68.0)
    assert 55 < temp.min() and temp.max() < 80
    # slow drift: over ten days the per-device trend spreads over about ±5 degF
    days = (t - T0) / 86400
    slopes = np.polyfit(days, temp.T, 1)[0]
    assert slopes.std() > 0.15 and np.abs(slopes).max() < 0.8

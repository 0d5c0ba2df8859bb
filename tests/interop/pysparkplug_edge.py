"""An edge node built with pysparkplug (run in its own venv, tests/interop/venvs/pysparkplug).

Publishes, with the site's broker account: an NBIRTH (node metric Flow as UInt64), a
DBIRTH of device "probe" (Int8, Int16, Int32, Int64 temperatures, a Float pH, a Boolean
"Pump" and a String "Label"), then ``rounds`` DDATA with new values (names and aliases),
then a DDEATH and an NDEATH. Prints one JSON line: every (metric, timestamp ms, value)
published.

    python pysparkplug_edge.py '{"host": ..., "port": ..., "username": ..., "password": ...,
                                 "group": ..., "node": ..., "rounds": 20}'
"""

import json
import sys
import time

import pysparkplug as psp

cfg = json.loads(sys.argv[1])
DT = psp.DataType
DEVICE = [("T8", 1, DT.INT8, lambda r: -5 - r), ("T16", 2, DT.INT16, lambda r: -30 + r),
          ("T32", 3, DT.INT32, lambda r: -40 + 2 * r), ("T64", 4, DT.INT64, lambda r: -12 - r),
          ("pH", 5, DT.FLOAT, lambda r: 6.25 + r / 8), ("Pump", 6, DT.BOOLEAN, lambda r: r % 2 == 0),
          ("Label", 7, DT.STRING, lambda r: f"round {r}")]
published = []
last = [0]


def stamp():
    last[0] = max(int(time.time() * 1000), last[0] + 1)
    return last[0]


def metrics(r, ts, by_alias):
    out = []
    for name, alias, dt, f in DEVICE:
        out.append(psp.Metric(timestamp=ts, name=name, alias=alias, datatype=dt, value=f(r)))
        if dt != DT.STRING:
            published.append([name, ts, float(f(r))])
    return out


client = psp.Client(username=cfg["username"], password=cfg["password"], client_id=cfg["node"] + "-psp")
ts = stamp()
flow = 2 ** 40 + 7
node = psp.EdgeNode(cfg["group"], cfg["node"],
                    [psp.Metric(timestamp=ts, name="Flow", alias=100, datatype=DT.UINT64, value=flow)], client=client)
published.append(["Flow", ts, float(flow)])
ts = stamp()
node.register(psp.Device("probe", metrics(0, ts, by_alias=False)))
node.connect(cfg["host"], port=cfg["port"], blocking=False)
time.sleep(1.0)
for r in range(1, cfg["rounds"] + 1):
    ts = stamp()
    node.update_device("probe", metrics(r, ts, by_alias=r % 2 == 0))
    time.sleep(0.02)
node.deregister("probe")          # DDEATH
time.sleep(0.3)
node.disconnect()                 # NDEATH
time.sleep(0.3)
print(json.dumps({"published": published}))

"""A device built with mqtt-spb-wrapper (run in its own venv, tests/interop/venvs/mqtt-spb-wrapper).

mqtt-spb-wrapper names a device's data metrics ``DATA/<name>`` in its DBIRTH and ``<name>``
in its DDATA, with no alias: sewerwatch maps them by either name. An edge node entity publishes the NBIRTH, a device entity a DBIRTH with
pH (and an attribute), then ``rounds`` DDATA of pH, and prints one JSON line: every (metric,
timestamp ms, value) published.

    python spb_wrapper_edge.py '{"host": ..., "port": ..., "username": ..., "password": ...,
                                 "group": ..., "node": ..., "device": ..., "rounds": 10,
                                 "device_username": ..., "device_password": ...}'
"""

import json
import sys
import time

from mqtt_spb_wrapper import MqttSpbEntityDevice, MqttSpbEntityEdgeNode

cfg = json.loads(sys.argv[1])
node = MqttSpbEntityEdgeNode(cfg["group"], cfg["node"])
dev = MqttSpbEntityDevice(cfg["group"], cfg["node"], cfg["device"])
published = []
last = [0]


def stamp():
    last[0] = max(int(time.time() * 1000), last[0] + 1)
    return last[0]


ts = stamp()
dev.attributes.set_value("model", "probe-2000")
dev.data.set_value("ph", 7.0, timestamp=ts)
published.append(["ph", ts, 7.0])
node.attributes.set_value("description", "manhole gateway")
# each entity is a connection of its own: the device with its own account where one is given
# (a broker that makes an account one connection)
for entity, cid, user, password in ((node, cfg["node"], cfg["username"], cfg["password"]),
                                    (dev, cfg["device"], cfg.get("device_username", cfg["username"]),
                                     cfg.get("device_password", cfg["password"]))):
    entity.connect(cfg["host"], cfg["port"], user, password, client_id=cid + "-spbw")
    deadline = time.time() + 10
    while not entity.is_connected() and time.time() < deadline:
        time.sleep(0.05)
node.publish_birth()
time.sleep(0.2)
dev.publish_birth()
for r in range(1, cfg["rounds"] + 1):
    time.sleep(0.05)
    ts = stamp()
    v = 7.0 + r / 16
    dev.data.set_value("ph", v, timestamp=ts)
    dev.publish_data()
    published.append(["ph", ts, v])
time.sleep(0.5)
dev.disconnect()
node.disconnect()
print(json.dumps({"published": published}))

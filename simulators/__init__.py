"""simulators: see README.md beside this file.

``simulators.generate(scenario, start, duration_s, step_s, devices, seed)`` gives a
scenario's readings as arrays (see :func:`simulators.batch.generate`). The other modules
of the face, imported by name: ``scenarios`` (``load``, ``names``), ``sources``,
``modbus_server`` (``ModbusSimulator``, ``main``), ``mqtt_publisher`` (``MqttPublisher``,
``main``).
"""

__all__ = ["generate", "modbus_server", "mqtt_publisher", "scenarios", "sources"]


def __getattr__(name):
    # keep ``import simulators`` light (the CLI imports it for --help)
    if name == "generate":
        from simulators.batch import generate
        return generate
    raise AttributeError(name)

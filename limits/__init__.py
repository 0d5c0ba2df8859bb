"""limits: rule packs and the vectorised evaluation core (see README.md beside this file).

The face other packages may use, by module (imported by name, ``from limits import
packs``; this file imports none of them so that ``import limits.cli`` stays light):

- ``packs``: ``load_pack``, ``available_packs``, ``Pack``, ``Rule`` — the ordinances' rules;
- ``evaluator``: ``evaluate``, ``prepare``, ``violations``, ``SensorMeta``,
  ``DEFAULT_GAP_MULTIPLE`` — batch evaluation and violation records;
- ``streaming``: ``StreamingEvaluator`` — the same episodes, batch by batch;
- ``core``: the vectorised primitives (``exceeds``, episodes, time-weighted averages,
  local days);
- ``days``: days of violation over half-open intervals, one rule for every record;
- ``readings``: where the law reads two ways, the reading taken (``[enforcement]``);
- ``statements``: a limit in the words it is stated in;
- ``history``: ``check_history`` over the database; ``csvio``: ``read_readings_csv``.
"""

__all__ = ["core", "csvio", "evaluator", "history", "packs", "streaming"]

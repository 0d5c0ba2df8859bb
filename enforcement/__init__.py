"""enforcement: what the village does about what sewerwatch finds.

Sampling schedules and failure to monitor, reports owed by industrial users, the whole test
of significant noncompliance (40 CFR 403.8(f)(2)(viii), criteria (A) to (H)), notices of
violation with their lifecycle and escalation by an enforcement response guide held as data,
what is due and overdue (and its alerts), the annual SNC publication list and the annual
pretreatment report. See README.md beside this file.

It stands on its own floor between the shell and ``alerts | lab | dashboards | simulators``:
it builds on lab (results, SNC counts, permits, documents) and alerts (channels). The shell
uses it through ``enforcement.cli.register`` and the pipeline through ``enforcement.due``;
nothing is imported here, so that the shell's ``import enforcement.cli`` stays light.
"""

__all__ = ["cli", "due"]

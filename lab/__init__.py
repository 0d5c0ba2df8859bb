"""lab: lab results, permit thresholds, significant noncompliance, surcharges and bills.

See README.md beside this file for the modules by role. Other packages use lab through
its commands (``lab.cli.register``, called by the shell) and its pure formulas
(``lab.formulas``); the rest is lab's own. Nothing is imported here, so that the shell's
``import lab.cli`` stays light.
"""

__all__ = ["cli", "formulas"]

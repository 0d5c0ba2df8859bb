"""field: instruments and field work.

The instrument register (:mod:`field.instruments`), maintenance windows and their approvals
(:mod:`field.windows`), calibration records (:mod:`field.calibrations`), grab samples compared
with the live sensors (:mod:`field.drift`), inspections of industrial users with their photos
(:mod:`field.inspections`), what ``sewerwatch run`` alerts about them
(:mod:`field.conditions`) and what the annual report lists (:mod:`field.annual`). See
README.md beside this file.
"""

__all__ = ["annual", "calibrations", "conditions", "drift", "inspections", "instruments", "photos", "windows"]

"""Files coming in: the lab results CSV (every bad row kept with its line and reason), the
rates TOML (surcharge rates, the non-detect policy) and the volumes CSV of
``sewerwatch surcharge``; the analyte and unit vocabulary of the lab CSV.
"""

from lab.readers.analytes import ANALYTES, analyte_id, unit_id
from lab.readers.labcsv import BadRow, LabFile, LabRow, parse_collected, read_lab_csv
from lab.readers.rates import read_lab_file_strict, read_non_detect_policy, read_rates, read_volumes

__all__ = [
    "ANALYTES", "BadRow", "LabFile", "LabRow", "analyte_id", "parse_collected", "read_lab_csv",
    "read_lab_file_strict", "read_non_detect_policy", "read_rates", "read_volumes", "unit_id",
]

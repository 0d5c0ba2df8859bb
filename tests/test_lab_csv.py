"""The lab CSV reader: tolerant of extra columns, strict on every value, line numbers kept."""

from datetime import datetime, timezone

import pytest

from lab.readers.labcsv import read_lab_csv
from foundation.errors import InputError

NOW = datetime(2026, 4, 1, tzinfo=timezone.utc)


def write(tmp_path, text, name="lab.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_rows_bad_rows_with_line_numbers(tmp_path):
    p = write(tmp_path, "\n".join([
        "sample_id,site,collected,analyte,value,unit,qualifier,analyst",   # 1
        "S1,mill,2026-01-05,bod5,420,mg/l,,JK",                            # 2 good
        "S1,mill,2026-01-05,chromium-7,3,mg/l,,JK",                        # 3 unknown analyte
        "S1,mill,2026-01-05,tss,310,g/l,,JK",                              # 4 unknown unit
        "S2,mill,2026-02-30,bod5,300,mg/l,,JK",                            # 5 bad date
        "S3,dairy,2026-01-07,bod5,300,mg/l,,JK",                           # 6 unknown site
        "S1,mill,2026-01-05,bod5,421,mg/l,,JK",                            # 7 duplicate of line 2
        "S4,mill,2026-01-09,tp,6500,ug/l,,JK",                             # 8 good, 6.5 mg/l
        "S4,mill,2026-01-09,cn,5,ug/l,<,JK",                               # 9 good non-detect 0.005 mg/l
        "S4,mill,2026-01-09,tkn,abc,mg/l,,JK",                             # 10 not a number
        "S4,mill,2026-01-09,fog,-1,mg/l,,JK",                              # 11 negative
        "S4,mill,2026-01-09,tss,12,mg/l,>,JK",                             # 12 unknown qualifier
        "S5,mill,2026-12-01,tss,12,mg/l,,JK",                              # 13 in the future
        "",                                                                # 14 blank: ignored
        "S4,mill,2026-01-09T08:00:00,tss,12,mg/l,,JK",                     # 15 no offset
        "S6,mill,2026-01-10T08:00:00-06:00,TSS,12,mg/L,,JK",               # 16 good (case)
    ]) + "\n")
    f = read_lab_csv(p, sites={"mill", "cheese"}, now=NOW)
    assert [r.line for r in f.rows] == [2, 8, 9, 16]
    bad = {b.line: b.reason for b in f.bad}
    assert sorted(bad) == [3, 4, 5, 6, 7, 10, 11, 12, 13, 15]
    assert "unknown analyte 'chromium-7' (closest known: cr" in bad[3]
    assert "unknown unit 'g/l'" in bad[4]
    assert "invalid date '2026-02-30'" in bad[5]
    assert "unknown site 'dairy'" in bad[6]
    assert "duplicate" in bad[7] and "line 2" in bad[7]
    assert "not a number" in bad[10] and ">= 0" in bad[11] and "qualifier" in bad[12]
    assert "future" in bad[13] and "offset" in bad[15]
    assert f.bad[0].raw == "S1,mill,2026-01-05,chromium-7,3,mg/l,,JK"
    tp, cn, tss = f.rows[1], f.rows[2], f.rows[3]
    assert tp.value_mg_l == pytest.approx(6.5) and tp.value == 6500 and tp.unit == "ug/l"
    assert cn.non_detect and cn.value_mg_l == pytest.approx(0.005)
    assert tss.analyte == "tss" and tss.unit == "mg/l"
    assert tss.collected == datetime(2026, 1, 10, 14, tzinfo=timezone.utc)
    assert f.rows[0].extra == {"analyst": "JK"}
    assert str(f.first_error()).startswith(f"{p}: line 3: unknown analyte")


def test_columns_in_any_order_and_qualifier_optional(tmp_path):
    p = write(tmp_path, "value,unit,analyte,site,sample_id,collected\n250,mg/l,bod5,mill,S1,2026-01-05\n")
    f = read_lab_csv(p, now=NOW)
    assert f.bad == [] and f.rows[0].value_mg_l == 250.0 and not f.rows[0].non_detect


def test_sample_at_two_sites_is_bad(tmp_path):
    p = write(tmp_path, "sample_id,site,collected,analyte,value,unit,qualifier\n"
                        "S1,mill,2026-01-05,bod5,1,mg/l,\nS1,dairy,2026-01-05,tss,1,mg/l,\n")
    f = read_lab_csv(p, now=NOW)
    assert [b.line for b in f.bad] == [3] and "site 'mill' on line 2" in f.bad[0].reason


def test_sample_at_two_times_is_bad(tmp_path):
    p = write(tmp_path, "sample_id,site,collected,analyte,value,unit,qualifier\n"
                        "S1,mill,2026-01-05,bod5,1,mg/l,\nS1,mill,2026-01-06,tss,1,mg/l,\n")
    f = read_lab_csv(p, now=NOW)
    assert [b.line for b in f.bad] == [3] and "collected 2026-01-05T00:00:00+00:00 on line 2" in f.bad[0].reason


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ("sample_id,site,analyte,value,unit\n", "missing column(s) collected"),
    ("sample_id,site,collected,analyte,value,unit,value\n", "more than once"),
])
def test_unusable_files(tmp_path, text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_lab_csv(write(tmp_path, text), now=NOW)


def test_missing_file_and_a_header_that_is_not_utf8(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_lab_csv(tmp_path / "nope.csv")
    p = tmp_path / "latin.csv"
    p.write_bytes(b"sample_id,site,collected,analyte,value,unit\xfc\nS1,mill,2026-01-05,bod5,1,mg/l\n")
    with pytest.raises(InputError, match="line 1: not UTF-8"):
        read_lab_csv(p)


def test_undecodable_bytes_or_a_nul_in_a_field_make_that_row_bad_and_the_rest_is_read(tmp_path):
    """A Latin-1 byte or a NUL byte in one field spoils one row, never the file."""
    p = tmp_path / "mixed.csv"
    p.write_bytes(b"sample_id,site,collected,analyte,value,unit,qualifier\n"
                  b"S1,mill,2026-01-05,bod5,420,mg/l,\n"              # 2 good
                  b"S2,m\xfchle,2026-01-05,bod5,1,mg/l,\n"            # 3 Latin-1
                  b"S3,mill,2026-01-05,tss\x00,1,mg/l,\n"             # 4 NUL
                  b'S4,mill,2026-01-06,tss,"12",mg/l,\n'              # 5 good (quoted)
                  b"S5,mill,2026-01-07,bod5,7,mg/l,\r\n")             # 6 good (CRLF)
    f = read_lab_csv(p, now=NOW)
    assert [r.line for r in f.rows] == [2, 5, 6]
    assert [(b.line, b.reason.split(" (")[0]) for b in f.bad] == [(3, "not UTF-8 text"), (4, "a NUL byte at byte 22 of the row")]
    assert f.bad[0].payload == b"S2,m\xfchle,2026-01-05,bod5,1,mg/l," and b"\x00" in f.bad[1].payload


def test_every_example_lab_file_reads_clean():
    from pathlib import Path
    examples = Path(__file__).resolve().parent.parent / "examples" / "lab"
    files = sorted(examples.glob("*.csv"))
    lab_files = [f for f in files if f.read_text().startswith("sample_id")]
    assert len(lab_files) >= 2
    for f in lab_files:
        lab = read_lab_csv(f, now=NOW)
        assert lab.bad == [] and lab.rows, f
    from lab.readers.rates import read_non_detect_policy, read_rates, read_volumes
    assert read_rates(examples / "rates.toml") == {"bod5": 0.20, "tss": 0.15, "tkn": 0.90, "tp": 2.50}
    assert read_non_detect_policy(examples / "rates.toml") == "zero"
    assert read_volumes(examples / "volumes.csv") == {"cheese-plant": 0.85, "plating-shop": 0.12}

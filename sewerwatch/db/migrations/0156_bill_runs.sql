-- A quarter's bills drafted, reviewed and issued (issue 25 item 6, lab/bill_runs.py), and
-- the payments recorded against issued bills with their late charges.
--
-- bill_runs: one draft of a quarter's bills: the rates file's text as it was (so issuing
--   prices exactly what was reviewed), the non-detect policy, who drafted it; the bills of
--   the draft in bill_run_items (the whole bill as JSON, as `sewerwatch bill --draft` makes
--   it). Issuing computes the bills again on the issue date: when they differ from the draft
--   in anything but the dates (a lab result corrected meanwhile), nothing is issued and the
--   quarter is drafted again. Issued bills are rows of `bills` with the run they came from.
CREATE TABLE bill_runs (
    id           bigserial PRIMARY KEY,
    quarter      text NOT NULL CHECK (quarter ~ '^[0-9]{4}Q[1-4]$'),
    state        text NOT NULL DEFAULT 'drafted' CHECK (state IN ('drafted', 'issued', 'superseded')),
    rates_name   text NOT NULL,                  -- the rates file's name, as the bills cite it
    rates_text   text NOT NULL,                  -- its TOML as it was when drafted
    non_detect   text NOT NULL,
    drafted_at   timestamptz NOT NULL DEFAULT now(),
    drafted_by   text NOT NULL,
    issued_on    date,
    issued_at    timestamptz,
    issued_by    text
);
CREATE INDEX bill_runs_quarter ON bill_runs (quarter);
CREATE TABLE bill_run_items (
    run_id      bigint NOT NULL REFERENCES bill_runs (id),
    site_id     int NOT NULL REFERENCES sites (id),
    bill        jsonb NOT NULL,
    PRIMARY KEY (run_id, site_id)
);

ALTER TABLE bills ADD COLUMN run_id bigint REFERENCES bill_runs (id);
-- A payment recorded: when, how much, and the late charge the ordinance adds for its day
-- (lab.charges.late_charge: the pack's [late_charge], e.g. palmyra-wi §13.46(8): 3 % after 20 days).
ALTER TABLE bills ADD COLUMN paid_on date;
ALTER TABLE bills ADD COLUMN paid_dollars numeric(12, 2);
ALTER TABLE bills ADD COLUMN late_days int;
ALTER TABLE bills ADD COLUMN late_dollars numeric(12, 2);

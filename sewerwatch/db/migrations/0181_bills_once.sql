-- One bill per site and period (lab/bill_runs.py): a quarter is billed once, by a bill run;
-- billing it again is a corrected bill, which replaces the one in force and keeps it in the
-- record.
--
-- bills.superseded_by: the corrected bill that replaced this one (NULL: the bill in force);
--   bills.superseded_at when it was replaced. bills.supersedes: on a corrected bill, the bill
--   it replaced (each bill is replaced at most once). The foreign keys are checked at commit,
--   so a correction marks the old bill and inserts the new one in one transaction.
-- bill_runs.correction: why the run's bills correct the ones issued before (NULL: the
--   quarter's first billing).
-- bills_one_in_force: at most one bill in force per site and period, whatever path inserts it.
ALTER TABLE bills ADD COLUMN superseded_by bigint REFERENCES bills (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE bills ADD COLUMN superseded_at timestamptz;
ALTER TABLE bills ADD COLUMN supersedes bigint UNIQUE REFERENCES bills (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE bills ADD CONSTRAINT bills_superseded_when CHECK ((superseded_by IS NULL) = (superseded_at IS NULL));
ALTER TABLE bills ADD CONSTRAINT bills_not_itself CHECK (superseded_by <> id AND supersedes <> id);
ALTER TABLE bill_runs ADD COLUMN correction text;

-- A database billed twice before this rule (two commands issued bills by two paths): the
-- latest bill of each site and period stays in force, each earlier one is marked replaced by
-- the next.
WITH chain AS (
    SELECT id, lead(id) OVER (PARTITION BY site_id, period ORDER BY issued_at, id) AS next_id
    FROM bills
)
UPDATE bills b SET superseded_by = c.next_id, superseded_at = now()
FROM chain c WHERE c.id = b.id AND c.next_id IS NOT NULL;
UPDATE bills b SET supersedes = o.id FROM bills o WHERE o.superseded_by = b.id;

CREATE UNIQUE INDEX bills_one_in_force ON bills (site_id, period) WHERE superseded_by IS NULL;

-- Enforcement and reporting (issue 13): findings, reports owed by industrial users,
-- compliance schedule milestones, notices of violation with their audit trail, and where each
-- lab result came from (the notice's evidence names the laboratory).
--
-- findings: what enforcement acts on besides the episodes of `violations`: failure to
--   monitor, reports more than 45 days late, noncompliance not reported, compliance schedule
--   milestones more than 90 days late (computed, `key` makes finding them again a no-op), and
--   what the superintendent records: pass through, interference, endangerment, violations
--   designated (40 CFR 403.8(f)(2)(viii)(C), (D), (H)). `snc_criterion` is the SNC criterion
--   a finding counts for; `occurred` the local day it arose (the SNC period it falls in).
-- user_reports: reports owed by industrial users, due and received; an accidental-discharge
--   report (palmyra-wi, 003_44f871d49a02d8f5.txt §13.49) is linked to the alert that called
--   for it.
-- compliance_milestones: the dates of a compliance schedule (an order's or a permit's).
-- notices: notices of violation and the orders after them; the whole document as JSON (the
--   inputs of its HTML and PDF), its state, dates and the notice it escalated from or to.
-- notice_events: the audit trail of each notice (append-only).

CREATE TABLE findings (
    id             bigserial PRIMARY KEY,
    site_id        int NOT NULL REFERENCES sites (id),
    kind           text NOT NULL CHECK (kind IN ('failure-to-monitor', 'late-report', 'unreported-noncompliance',
                                                 'compliance-schedule', 'pass-through', 'interference',
                                                 'endangerment', 'designated', 'snc')),
    snc_criterion  text CHECK (snc_criterion IN ('C', 'D', 'E', 'F', 'G', 'H')),
    occurred       date NOT NULL,                  -- local day the finding arose
    period_start   date,                           -- the period it concerns, where it has one
    period_end     date,                           -- (exclusive)
    summary        text NOT NULL,
    citation       text,                           -- the requirement violated, by title and section
    words          text,                           -- its words
    violation_id   bigint REFERENCES violations (id),
    evidence       jsonb NOT NULL DEFAULT '{}'::jsonb,
    key            text UNIQUE,                    -- computed findings: what makes them the same
    recorded_by    text NOT NULL DEFAULT current_user,
    recorded_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX findings_site_occurred ON findings (site_id, occurred);

CREATE TABLE user_reports (
    id            bigserial PRIMARY KEY,
    site_id       int NOT NULL REFERENCES sites (id),
    kind          text NOT NULL CHECK (kind IN ('self-monitoring', 'accidental-discharge', 'baseline',
                                                '90-day-compliance', 'compliance-schedule', 'other')),
    title         text NOT NULL,
    period_start  date,                            -- the period a periodic report covers
    period_end    date,
    due_on        date NOT NULL,                   -- local day it is due
    due_at        timestamptz NOT NULL,            -- the instant it is late (an accidental report: hours after the alert)
    received_on   date,
    received_at   timestamptz,
    received_by   text,
    note          text,
    alert_id      bigint UNIQUE REFERENCES alerts (id),
    violation_id  bigint REFERENCES violations (id),
    citation      text,
    words         text,
    created_by    text NOT NULL DEFAULT current_user,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX user_reports_site_due ON user_reports (site_id, due_on);

CREATE TABLE compliance_milestones (
    id           bigserial PRIMARY KEY,
    site_id      int NOT NULL REFERENCES sites (id),
    description  text NOT NULL,
    due_on       date NOT NULL,
    met_on       date,
    source       text,                             -- the order or permit that set it
    created_by   text NOT NULL DEFAULT current_user,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE notices (
    id                    bigserial PRIMARY KEY,
    number                text NOT NULL UNIQUE,    -- NOV-2026-001
    site_id               int NOT NULL REFERENCES sites (id),
    violation_id          bigint REFERENCES violations (id),
    finding_id            bigint REFERENCES findings (id),
    action                text NOT NULL,           -- the guide's action id
    finding_kind          text NOT NULL,
    recurrence            int NOT NULL,
    state                 text NOT NULL DEFAULT 'drafted'
                          CHECK (state IN ('drafted', 'issued', 'response-received', 'closed', 'escalated')),
    respond_within_days   int NOT NULL,
    drafted_on            date NOT NULL,
    issued_on             date,
    response_due          date,
    response_received_on  date,
    closed_on             date,
    escalated_from        bigint REFERENCES notices (id),
    escalated_to          bigint REFERENCES notices (id),
    document              jsonb NOT NULL,          -- everything the notice says: the inputs of its HTML and PDF
    pdf_sha256            text,                    -- of the PDF as issued
    CHECK ((violation_id IS NULL) <> (finding_id IS NULL))
);
CREATE INDEX notices_site ON notices (site_id);
CREATE INDEX notices_open ON notices (state) WHERE state IN ('issued', 'response-received');

CREATE TABLE notice_events (
    id         bigserial PRIMARY KEY,
    notice_id  bigint NOT NULL REFERENCES notices (id),
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text NOT NULL DEFAULT current_user,
    event      text NOT NULL CHECK (event IN ('drafted', 'issued', 'response-received', 'closed', 'escalated',
                                              'alerted')),
    from_state text,
    to_state   text,
    note       text,
    detail     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX notice_events_notice ON notice_events (notice_id);

CREATE FUNCTION notice_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'notice_events is append-only: the audit trail of a notice is never changed';
END
$$;
CREATE TRIGGER notice_events_append_only BEFORE UPDATE OR DELETE ON notice_events
    FOR EACH ROW EXECUTE FUNCTION notice_events_append_only();

-- Alerts about enforcement: a notice unanswered by its deadline, a report overdue.
ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check
    CHECK (kind IN ('violation', 'sensor-health', 'permit', 'enforcement'));

-- Where a lab result came from: the laboratory (the lab CSV's optional `laboratory` column)
-- and the analytical method (`method`).
ALTER TABLE lab_samples ADD COLUMN laboratory text;
ALTER TABLE lab_results ADD COLUMN method text;
-- the view's * was expanded when it was made: made again, it shows the new column (and 0030's source)
CREATE OR REPLACE VIEW lab_results_current AS
    SELECT DISTINCT ON (sample_id, analyte) *
    FROM lab_results
    ORDER BY sample_id, analyte, version DESC;

GRANT SELECT ON findings, user_reports, compliance_milestones, notices, notice_events TO sewerwatch_grafana;

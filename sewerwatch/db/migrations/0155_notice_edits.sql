-- Notices edited in the office before they are issued, and penalties collected (issue 25
-- item 4, enforcement/notices.py).
--
-- revision: 1 when drafted, one more at each edit of the free-text parts the enforcement
--   response guide allows (the guide's actions name them: `editable`); an edit names the
--   revision it was made from, so two people editing one draft get a conflict, not a silent
--   overwrite. Each edit is a notice_events row ('edited') with the words before and after.
-- penalty_dollars, penalty_collected_on: a penalty or fine collected on the notice (the
--   ICIS-NPDES pretreatment performance summary counts them: DollarAmountPenaltiesCollected).
ALTER TABLE notices ADD COLUMN revision int NOT NULL DEFAULT 1;
ALTER TABLE notices ADD COLUMN penalty_dollars numeric(12, 2) CHECK (penalty_dollars IS NULL OR penalty_dollars >= 0);
ALTER TABLE notices ADD COLUMN penalty_collected_on date;
ALTER TABLE notice_events DROP CONSTRAINT notice_events_event_check;
ALTER TABLE notice_events ADD CONSTRAINT notice_events_event_check
    CHECK (event IN ('drafted', 'issued', 'response-received', 'closed', 'escalated', 'alerted', 'edited',
                     'penalty-collected'));

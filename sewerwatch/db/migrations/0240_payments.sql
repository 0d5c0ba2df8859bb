-- Payments received, each against a bill, and the bank's files of payments (lab/payments.py,
-- lab/statements.py).
--
-- payments: one payment of a bill (a bill may be paid in parts): the day it was paid, the
--   amount [$], the reference the bank gave (holding the bill's number), the late charge the
--   ordinance added with it [$] (lab.charges.late_charge: once per bill), the bank file it came
--   from and its line. A payment recorded one by one stays in bills.paid_on / paid_dollars
--   (migration 0156); a statement counts both.
-- payment_imports: a bank file as it came (bytes, sha256) with its preview; state 'staged'
--   until recorded, once ('recorded'); a file recorded already is refused by its sha256.
CREATE TABLE payment_imports (
    id           bigserial PRIMARY KEY,
    filename     text NOT NULL,
    sha256       text NOT NULL,
    data         bytea NOT NULL,
    preview      jsonb NOT NULL,
    state        text NOT NULL DEFAULT 'staged' CHECK (state IN ('staged', 'recorded', 'discarded')),
    staged_by    text NOT NULL,
    staged_at    timestamptz NOT NULL DEFAULT now(),
    recorded_by  text,
    recorded_at  timestamptz,
    report       jsonb
);
CREATE UNIQUE INDEX payment_imports_once ON payment_imports (sha256) WHERE state = 'recorded';

CREATE TABLE payments (
    id            bigserial PRIMARY KEY,
    bill_id       bigint NOT NULL REFERENCES bills (id),
    paid_on       date NOT NULL,
    dollars       numeric(12, 2) NOT NULL CHECK (dollars > 0),
    reference     text NOT NULL,
    late_days     int NOT NULL DEFAULT 0,
    late_dollars  numeric(12, 2) NOT NULL DEFAULT 0,
    import_id     bigint REFERENCES payment_imports (id),
    line          int,
    recorded_by   text NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payments_bill ON payments (bill_id, paid_on);

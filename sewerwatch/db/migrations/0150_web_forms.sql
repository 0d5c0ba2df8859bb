-- One submission of a form, one action (issue 25 item 7; web/forms.py).
--
-- Every form of the office that acts carries a key made when the page was drawn. The
-- action runs in the same transaction that inserts its key here, so a second submission
-- with that key (a double click, the back button, a reload that sends the form again)
-- waits for the first, finds the key and gets the first one's outcome instead of acting
-- again. A submission that failed left no row (its transaction rolled back): sending it
-- again acts. Rows older than 30 days are removed by the office (web/server.py).
CREATE TABLE web_form_submissions (
    key         text PRIMARY KEY CHECK (length(key) BETWEEN 16 AND 128),
    account_id  int NOT NULL REFERENCES web_accounts (id),
    action      text NOT NULL,                   -- e.g. lab.import, permit.edit, notice.issue
    done_at     timestamptz NOT NULL DEFAULT now(),
    outcome     jsonb NOT NULL DEFAULT '{}'::jsonb   -- what the page shows afterwards (its location)
);
CREATE INDEX web_form_submissions_done ON web_form_submissions (done_at);

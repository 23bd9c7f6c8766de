-- +goose Up

-- The loop closes by email: every participant hears the final outcome, a
-- required participant who has not decided is reminded before the
-- deadline, and every email about one invitation threads under it.

-- reminders: when a required participant who has not decided is reminded,
-- in seconds before the deadline, distinct, latest first (the create
-- request's "reminders"; empty: never). Existing agreements get the
-- default, 24 hours and 1 hour before.
-- remind_from: the first reminder time (the deadline less the first of
-- reminders; NULL for none), which the statements that set the deadline or
-- the reminders keep, so the reminder sweep reads through its partial
-- index only the pending agreements whose reminders have begun.
ALTER TABLE agreements ADD COLUMN reminders integer[] NOT NULL DEFAULT '{86400,3600}',
                       ADD COLUMN remind_from timestamptz;
SELECT set_config('consensus.scope', 'service', true);
UPDATE agreements SET remind_from = deadline - interval '86400 seconds' WHERE outcome_status = 'pending';
CREATE INDEX agreements_remind_idx ON agreements (remind_from) WHERE outcome_status = 'pending';

-- participant_id: whom an outcome email or a reminder is for (the others
-- name their invitation only). remind_at: the reminder time a reminder
-- stands for. refs: the References of the message, oldest first, the last
-- one its In-Reply-To: the invitation's first email for every later email
-- of the invitation, and the reply an answer answers.
ALTER TABLE outbox
    ADD COLUMN participant_id uuid REFERENCES participants (id),
    ADD COLUMN remind_at      timestamptz,
    ADD COLUMN refs           text[] NOT NULL DEFAULT '{}';
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('invitation', 'revision', 'answer', 'enrollment', 'outcome', 'reminder'));
ALTER TABLE outbox ADD CONSTRAINT outbox_notice_check CHECK (
    (kind IN ('outcome', 'reminder')) = (participant_id IS NOT NULL)
    AND (kind = 'reminder') = (remind_at IS NOT NULL));

-- At most one outcome email per participant, and one reminder per
-- participant and reminder time, whichever replica or retry queues it: the
-- statements that queue them insert nothing where these hold a row. The
-- reminder index is also what the reminder sweep probes.
CREATE UNIQUE INDEX outbox_outcome_once ON outbox (participant_id) WHERE kind = 'outcome';
CREATE UNIQUE INDEX outbox_reminder_once ON outbox (participant_id, remind_at) WHERE kind = 'reminder';

-- +goose Down
DROP INDEX outbox_reminder_once;
DROP INDEX outbox_outcome_once;
SELECT set_config('consensus.scope', 'service', true);
DELETE FROM outbox_attempts WHERE outbox_id IN (SELECT id FROM outbox WHERE kind IN ('outcome', 'reminder'));
DELETE FROM outbox WHERE kind IN ('outcome', 'reminder');
ALTER TABLE outbox DROP CONSTRAINT outbox_notice_check;
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('invitation', 'revision', 'answer', 'enrollment'));
ALTER TABLE outbox DROP COLUMN refs, DROP COLUMN remind_at, DROP COLUMN participant_id;
DROP INDEX agreements_remind_idx;
ALTER TABLE agreements DROP COLUMN remind_from, DROP COLUMN reminders;

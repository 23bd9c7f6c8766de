-- +goose Up

-- Webhook deliveries leave through River's job queue. The trigger on a new
-- agreement version still writes one webhook_deliveries row per
-- notification and receiver (its id is the webhook-id, the same on every
-- attempt; its state is what operators see) and now also one River job
-- (kind 'webhook_delivery', queue 'webhook', seven attempts: the first and
-- the six retries of the schedule) naming the row, in the same transaction,
-- and wakes River's producers with the notification River's own inserts
-- send. The trigger's WHEN clause still reads webhooks_registered (00009):
-- an append to a room where no endpoint was ever registered calls no
-- function and queues no job.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_enqueue() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
    queued bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE agreement_id = NEW.id AND disabled_at IS NULL) THEN
        RETURN NULL;
    END IF;
    IF NEW.head_seq > OLD.head_seq THEN
        kinds := kinds || 'room.event'::text;
    END IF;
    IF NEW.outcome_status IS DISTINCT FROM OLD.outcome_status THEN
        kinds := kinds || 'room.outcome'::text;
    END IF;
    IF NEW.current_revision IS DISTINCT FROM OLD.current_revision THEN
        kinds := kinds || 'room.revision'::text;
    END IF;
    WITH d AS (
        INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at)
        SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp()
        FROM participants p
        JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
        CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
        WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
        ORDER BY k.n
        RETURNING id, participant_id, created_at
    ), j AS (
        INSERT INTO river_job (args, kind, max_attempts, queue)
        SELECT jsonb_build_object('delivery_id', d.id, 'participant_id', d.participant_id), 'webhook_delivery', 7, 'webhook'
        FROM d ORDER BY d.created_at
        RETURNING 1
    )
    SELECT count(*) INTO queued FROM j;
    IF queued > 0 THEN
        PERFORM pg_notify(current_schema() || '.river_insert', '{"queue": "webhook"}');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Deliveries still to make become jobs, due when they were due (a leased
-- one when its lease runs out), their attempts carried over.
INSERT INTO river_job (state, attempt, max_attempts, scheduled_at, args, kind, queue)
SELECT 'available', least(d.attempts, 6), 7, d.next_attempt_at,
       jsonb_build_object('delivery_id', d.id, 'participant_id', d.participant_id), 'webhook_delivery', 'webhook'
FROM webhook_deliveries d
WHERE d.state IN ('queued', 'retrying')
ORDER BY d.next_attempt_at, d.id;

-- Nothing looks for due deliveries by time any more.
DROP INDEX webhook_deliveries_due;

-- +goose Down
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state IN ('queued', 'retrying');
DELETE FROM river_job WHERE kind = 'webhook_delivery';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_enqueue() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE agreement_id = NEW.id AND disabled_at IS NULL) THEN
        RETURN NULL;
    END IF;
    IF NEW.head_seq > OLD.head_seq THEN
        kinds := kinds || 'room.event'::text;
    END IF;
    IF NEW.outcome_status IS DISTINCT FROM OLD.outcome_status THEN
        kinds := kinds || 'room.outcome'::text;
    END IF;
    IF NEW.current_revision IS DISTINCT FROM OLD.current_revision THEN
        kinds := kinds || 'room.revision'::text;
    END IF;
    INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at)
    SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp()
    FROM participants p
    JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
    CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
    WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
    ORDER BY k.n;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

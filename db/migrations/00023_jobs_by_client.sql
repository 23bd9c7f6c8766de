-- +goose Up

-- Every job goes in through River's client, in the transaction of the
-- change that causes it: nothing of ours writes River's tables or sends its
-- notifications, which a River upgrade may change. The webhook trigger
-- (00006, gated by 00009, writing River's jobs since 00011 and 00012) goes:
-- the Go code that moves an agreement's chain head, outcome or revision
-- now writes the deliveries and queues their jobs itself, and only in an
-- agreement where an endpoint was ever registered (webhooks_registered,
-- 00009, which webhooks_mark_agreement still keeps).
DROP TRIGGER agreements_webhooks ON agreements;
DROP FUNCTION webhooks_enqueue();

-- One email worker for every kind of email, with one attempt history: an
-- enrollment link's email becomes an outbox message of kind 'enrollment',
-- with the enrollment's id (its body is sealed under that id), in the
-- enrollment's workspace, and no invitation or agreement. Its attempts are
-- recorded in outbox_attempts as every other email's. The jobs queued for
-- the old columns name the enrollment's id, which is now the message's.
ALTER TABLE outbox ALTER COLUMN invitation_id DROP NOT NULL;
ALTER TABLE outbox ALTER COLUMN agreement_id DROP NOT NULL;
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('invitation', 'revision', 'answer', 'enrollment'));
ALTER TABLE outbox ADD CONSTRAINT outbox_parent_check CHECK (CASE WHEN kind = 'enrollment'
    THEN invitation_id IS NULL AND agreement_id IS NULL
    ELSE invitation_id IS NOT NULL AND agreement_id IS NOT NULL END);

-- A link voided before its email went out (its operator removed) kept a
-- queued state without a body: it is failed now.
INSERT INTO outbox (id, recipient, subject, message_id, sealed_body, state, attempts, next_attempt_at, last_reply,
                    created_at, sent_at, kind, workspace_id)
SELECT id, recipient, subject, message_id, sealed_body,
       CASE WHEN sealed_body IS NULL AND state IN ('queued', 'retrying') THEN 'failed' ELSE state END,
       attempts, created_at,
       CASE WHEN sealed_body IS NULL AND state IN ('queued', 'retrying') THEN 'the operator was removed' ELSE last_reply END,
       created_at, sent_at, 'enrollment', workspace_id
FROM operator_enrollments
WHERE recipient IS NOT NULL;

-- The enrollment's own email columns stay for this release (expand, then
-- contract): a replica of the previous release, still running during a
-- rolling upgrade, writes a new link's email there and queues the old job
-- kind, which a new replica adopts into the outbox before delivering it
-- (OutboxAdoptEnrollment). A later release drops them.

-- +goose Down
UPDATE operator_enrollments e
SET recipient = o.recipient, subject = o.subject, message_id = o.message_id, sealed_body = o.sealed_body,
    state = o.state, attempts = o.attempts, last_reply = o.last_reply, sent_at = o.sent_at
FROM outbox o WHERE o.id = e.id AND o.kind = 'enrollment';
DELETE FROM outbox_attempts WHERE outbox_id IN (SELECT id FROM outbox WHERE kind = 'enrollment');
DELETE FROM outbox WHERE kind = 'enrollment';
ALTER TABLE outbox DROP CONSTRAINT outbox_parent_check;
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check CHECK (kind IN ('invitation', 'revision', 'answer'));
ALTER TABLE outbox ALTER COLUMN invitation_id SET NOT NULL;
ALTER TABLE outbox ALTER COLUMN agreement_id SET NOT NULL;

-- The trigger as 00012 left it.
-- +goose StatementBegin
CREATE FUNCTION webhooks_enqueue() RETURNS trigger
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
        INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at, workspace_id)
        SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp(), NEW.workspace_id
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
CREATE TRIGGER agreements_webhooks
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (NEW.webhooks_registered AND (NEW.head_seq > OLD.head_seq OR NEW.outcome_status IS DISTINCT FROM OLD.outcome_status
          OR NEW.current_revision IS DISTINCT FROM OLD.current_revision))
    EXECUTE FUNCTION webhooks_enqueue();

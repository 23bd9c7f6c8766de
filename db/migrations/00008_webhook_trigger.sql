-- +goose Up

-- The webhook trigger read the invitation id through a join on
-- invitations, which participants.invitation_id already holds (00002), and
-- checked for an empty list of kinds that its WHEN clause already rules
-- out. It runs in the transaction of every append to a room with a live
-- endpoint.
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

-- +goose Down
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
    IF cardinality(kinds) = 0 THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at)
    SELECT gen_random_uuid(), w.participant_id, NEW.id, i.id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp()
    FROM participants p
    JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
    JOIN invitations i ON i.participant_id = p.id
    CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
    WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
    ORDER BY k.n;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

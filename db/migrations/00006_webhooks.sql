-- +goose Up

-- Webhooks: one opt-in endpoint per
-- participant, separate from the binding's runtimeEndpoint (never fetched).
-- disabled_at is set when the receiver answered 410 Gone.
CREATE TABLE webhooks (
    participant_id  uuid PRIMARY KEY REFERENCES participants (id),
    agreement_id    uuid NOT NULL REFERENCES agreements (id),
    url             text NOT NULL CHECK (url LIKE 'https://%' AND length(url) <= 2048),
    created_at      timestamptz NOT NULL,
    disabled_at     timestamptz,
    disabled_reason text
);
-- The trigger below runs on every append: this index lets it see in one
-- probe that an agreement has no live endpoint, the common case.
CREATE INDEX webhooks_live_by_agreement ON webhooks (agreement_id) WHERE disabled_at IS NULL;

-- The durable queue: one row per notification and receiver, written by the
-- trigger below in the transaction that changed the room, so a committed
-- change always has its deliveries and a rolled-back one never does. The
-- row holds only ids, the seq and the outcome status (the thin payload):
-- never participant text, never a credential. id is the webhook-id, stable
-- across the attempts of one notification.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    participant_id  uuid NOT NULL REFERENCES participants (id),
    agreement_id    uuid NOT NULL REFERENCES agreements (id),
    invitation_id   uuid NOT NULL REFERENCES invitations (id),
    type            text NOT NULL CHECK (type IN ('room.event', 'room.outcome', 'room.revision')),
    seq             bigint NOT NULL,
    outcome         text NOT NULL,
    created_at      timestamptz NOT NULL,
    state           text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'retrying', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_status     integer,
    last_error      text,
    finished_at     timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state IN ('queued', 'retrying');
CREATE INDEX webhook_deliveries_participant ON webhook_deliveries (participant_id, created_at);

-- A new version of an agreement queues one delivery per kind of change
-- (a new event, a changed outcome, a new revision) for every live webhook
-- of its participants that are not revoked. Claims and revocations change
-- the version too but notify no webhook.
-- +goose StatementBegin
CREATE FUNCTION webhooks_enqueue() RETURNS trigger
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

CREATE TRIGGER agreements_webhooks
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (NEW.head_seq > OLD.head_seq OR NEW.outcome_status IS DISTINCT FROM OLD.outcome_status
          OR NEW.current_revision IS DISTINCT FROM OLD.current_revision)
    EXECUTE FUNCTION webhooks_enqueue();

-- +goose Down
DROP TRIGGER agreements_webhooks ON agreements;
DROP FUNCTION webhooks_enqueue();
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;

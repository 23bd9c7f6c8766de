-- +goose NO TRANSACTION
-- +goose Up

-- Webhook deliveries of the previous release (v0.9.0) during a rolling
-- upgrade. 00023 dropped the trigger that wrote an agreement's deliveries
-- and their River jobs (00011, 00012): this release's code writes them in
-- the transaction of the change and queues their jobs through River's
-- client. A replica of v0.9.0, still serving beside this release until its
-- last replica stops, relies on that trigger, so its changes would queue no
-- delivery. Until then this trigger writes their deliveries as 00012's did,
-- but marked not yet queued (queued = false) and with no job: nothing of
-- ours writes River's tables or its notification channel. A replica of this
-- release takes such deliveries in bounded batches (WebhookDeliveriesAdopt,
-- run with the deadline sweep every 2 s) and queues their jobs through
-- River's client in the transaction that marks them queued.
--
-- The trigger fires only in sessions of the previous release: every pool of
-- this release sets the start-up parameter consensus.release (store.go,
-- pgxConfig), and a session that carries it writes its own deliveries.
-- v0.9.0's pools set only consensus.scope.
--
-- The next release, which no v0.9.0 replica runs beside, drops the
-- trigger, its function, the sweep and (once no row is left unqueued) the
-- column and its index.
--
-- Without a transaction: the index is built CONCURRENTLY, so a large
-- webhook_deliveries keeps taking inserts meanwhile, and each statement
-- can run again after a failure. The trigger comes first, to shorten the
-- time during which a v0.9.0 change queues nothing (from 00023's commit to
-- the trigger's); CREATE TRIGGER waits for the transactions updating
-- agreements, so the changes of that time are committed when the next
-- statement writes their deliveries.

-- The deliveries that exist are queued already, as are those this
-- release's code writes (WebhookDeliveriesQueue leaves the default).
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS queued boolean NOT NULL DEFAULT true;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks_record_previous() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    kinds text[] := '{}';
BEGIN
    -- A session of this release writes its own (the trigger's WHEN says so too).
    IF coalesce(current_setting('consensus.release', true), '') <> '' THEN
        RETURN NULL;
    END IF;
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
    INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at, workspace_id, queued)
    SELECT gen_random_uuid(), w.participant_id, NEW.id, p.invitation_id, k.kind, NEW.head_seq, NEW.outcome_status, clock_timestamp(), clock_timestamp(), NEW.workspace_id, false
    FROM participants p
    JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL
    CROSS JOIN unnest(kinds) WITH ORDINALITY AS k(kind, n)
    WHERE p.agreement_id = NEW.id AND p.revoked_at IS NULL
    ORDER BY k.n;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- 00012's condition, and only in a session without consensus.release.
CREATE OR REPLACE TRIGGER agreements_webhooks_previous
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (coalesce(current_setting('consensus.release', true), '') = ''
          AND NEW.webhooks_registered AND (NEW.head_seq > OLD.head_seq OR NEW.outcome_status IS DISTINCT FROM OLD.outcome_status
          OR NEW.current_revision IS DISTINCT FROM OLD.current_revision))
    EXECUTE FUNCTION webhooks_record_previous();

-- The changes a replica of v0.9.0 committed between 00023's commit and
-- this trigger's queued nothing. Each transaction that appended events (its
-- events share an xmin) since shortly before 00023 gets what the trigger
-- would have written and lacks: a room.event delivery with its head seq to
-- every live endpoint registered before it, and a room.outcome one when
-- its events hold the deciding one. The changes before 00023 had theirs
-- from the old trigger; no replica of this release served yet. (An expiry
-- or a revision in those milliseconds is not recovered: it has no event.)
INSERT INTO webhook_deliveries (id, participant_id, agreement_id, invitation_id, type, seq, outcome, created_at, next_attempt_at, workspace_id, queued)
SELECT gen_random_uuid(), w.participant_id, a.id, p.invitation_id, k.kind, g.seq,
       CASE WHEN oe.seq <= g.seq THEN a.outcome_status ELSE 'pending' END,
       clock_timestamp(), clock_timestamp(), a.workspace_id, false
FROM (SELECT e.agreement_id, min(e.seq) AS first, max(e.seq) AS seq, min(e.created_at) AS at
      FROM events e
      WHERE e.created_at >= (SELECT max(tstamp) FROM goose_db_version WHERE version_id = 23 AND is_applied) - interval '1 minute'
      GROUP BY e.agreement_id, e.xmin::text) g
JOIN agreements a ON a.id = g.agreement_id AND a.webhooks_registered
LEFT JOIN events oe ON oe.id = a.outcome_event_id
JOIN participants p ON p.agreement_id = a.id AND p.revoked_at IS NULL
JOIN webhooks w ON w.participant_id = p.id AND w.disabled_at IS NULL AND w.created_at <= g.at
CROSS JOIN (VALUES ('room.event', 1), ('room.outcome', 2)) AS k(kind, n)
WHERE (k.kind = 'room.event' OR oe.seq BETWEEN g.first AND g.seq)
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.participant_id = w.participant_id AND d.type = k.kind AND d.seq = g.seq)
ORDER BY g.seq, k.n;

-- The deliveries not yet queued, oldest first; normally none.
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_unqueued;
CREATE INDEX CONCURRENTLY webhook_deliveries_unqueued ON webhook_deliveries (created_at) WHERE NOT queued;

-- +goose Down
-- A delivery still unqueued would lose its job: run the sweep (any replica
-- of this release) until none is left before going down.
DROP TRIGGER IF EXISTS agreements_webhooks_previous ON agreements;
DROP FUNCTION IF EXISTS webhooks_record_previous();
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_unqueued;
ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS queued;

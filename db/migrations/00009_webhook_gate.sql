-- +goose Up

-- The webhook trigger ran its function on every append, only to find in
-- most rooms that nobody registered an endpoint: make bench measured that
-- call at about a fifth of an append's cost. The agreement now
-- records that an endpoint was ever registered in it, and the trigger's
-- WHEN clause reads that flag, so a room without one calls no function.
-- The flag is never cleared: a room whose endpoints were all removed or
-- disabled calls the function, which finds no live endpoint, as before.
ALTER TABLE agreements ADD COLUMN webhooks_registered boolean NOT NULL DEFAULT false;
UPDATE agreements SET webhooks_registered = true WHERE id IN (SELECT agreement_id FROM webhooks);

-- Registration sets the flag itself, having locked the agreement first (the
-- order a revocation takes). This trigger also sets it for a registration
-- that did not, such as one by a replica still running the code before
-- this migration during a rolling deploy.
-- +goose StatementBegin
CREATE FUNCTION webhooks_mark_agreement() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agreements SET webhooks_registered = true WHERE id = NEW.agreement_id AND NOT webhooks_registered;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER webhooks_mark_agreement
    AFTER INSERT OR UPDATE ON webhooks
    FOR EACH ROW
    WHEN (NEW.disabled_at IS NULL)
    EXECUTE FUNCTION webhooks_mark_agreement();

DROP TRIGGER agreements_webhooks ON agreements;
CREATE TRIGGER agreements_webhooks
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (NEW.webhooks_registered AND (NEW.head_seq > OLD.head_seq OR NEW.outcome_status IS DISTINCT FROM OLD.outcome_status
          OR NEW.current_revision IS DISTINCT FROM OLD.current_revision))
    EXECUTE FUNCTION webhooks_enqueue();

-- +goose Down
DROP TRIGGER agreements_webhooks ON agreements;
CREATE TRIGGER agreements_webhooks
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (NEW.head_seq > OLD.head_seq OR NEW.outcome_status IS DISTINCT FROM OLD.outcome_status
          OR NEW.current_revision IS DISTINCT FROM OLD.current_revision)
    EXECUTE FUNCTION webhooks_enqueue();
DROP TRIGGER webhooks_mark_agreement ON webhooks;
DROP FUNCTION webhooks_mark_agreement();
ALTER TABLE agreements DROP COLUMN webhooks_registered;

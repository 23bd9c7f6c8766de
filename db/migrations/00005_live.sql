-- +goose Up

-- Live rooms (issue 11, SPEC R-LIVE): every change a room shows bumps its
-- agreement's version (an event, an outcome, a revision, a claim, a
-- revocation), so a trigger on that one column tells every replica. The
-- NOTIFY is part of the changing transaction: it is delivered when, and only
-- if, the change commits, to every session LISTENing on consensus_room (one
-- dedicated connection per replica). The payload is the agreement id alone:
-- a waiter re-reads what it needs with its own credential.
-- +goose StatementBegin
CREATE FUNCTION agreements_notify_version() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('consensus_room', NEW.id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER agreements_version_changed
    AFTER UPDATE OF version ON agreements
    FOR EACH ROW
    WHEN (NEW.version IS DISTINCT FROM OLD.version)
    EXECUTE FUNCTION agreements_notify_version();

-- +goose Down
DROP TRIGGER agreements_version_changed ON agreements;
DROP FUNCTION agreements_notify_version();

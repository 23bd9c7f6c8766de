-- +goose Up

-- The evidence of a participant's standing decision when it was recorded
-- from a reply to the invitation email (the events.evidence of
-- decision_event_id), NULL for a decision posted over HTTP or no decision:
-- CONSENSUS.md states it, and it is written in the append, which reads the
-- roster and not the events.
ALTER TABLE participants ADD COLUMN decision_evidence text;

-- Decisions recorded before this column keep their evidence. The owner is
-- bound by row-level security, so the statement runs in the service scope.
SELECT set_config('consensus.scope', 'service', true);
UPDATE participants p
SET decision_evidence = e.evidence
FROM events e
WHERE e.id = p.decision_event_id AND e.evidence IS NOT NULL;

-- +goose Down
ALTER TABLE participants DROP COLUMN decision_evidence;

-- +goose Up

-- Every replica settles the rooms whose deadline passed while pending, a
-- few seconds after it (so a webhook or a stream hears of the expiry
-- without anyone reading the room first). This partial index is what that
-- sweep reads: it holds only the pending agreements, and none of the
-- columns an append updates, so appends stay heap-only updates.
CREATE INDEX agreements_pending_deadline_idx ON agreements (deadline) WHERE outcome_status = 'pending';

-- +goose Down
DROP INDEX agreements_pending_deadline_idx;

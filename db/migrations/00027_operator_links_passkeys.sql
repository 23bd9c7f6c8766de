-- +goose Up

-- A link withdrawn because a newer one was issued for its operator
-- (consensusd operator link): it no longer enrolls, and its email, if not
-- sent yet, is not sent. A used link keeps used_at; a withdrawn one gets
-- withdrawn_at instead, so the console can tell the two apart.
ALTER TABLE operator_enrollments ADD COLUMN withdrawn_at timestamptz;

-- A signed-in operator registers another passkey: a ceremony of its own
-- kind, whose session data names the operator (no link is involved).
ALTER TABLE operator_ceremonies DROP CONSTRAINT operator_ceremonies_kind_check;
ALTER TABLE operator_ceremonies ADD CONSTRAINT operator_ceremonies_kind_check CHECK (kind IN ('enroll', 'signin', 'passkey'));

-- +goose Down
DELETE FROM operator_ceremonies WHERE kind = 'passkey';
ALTER TABLE operator_ceremonies DROP CONSTRAINT operator_ceremonies_kind_check;
ALTER TABLE operator_ceremonies ADD CONSTRAINT operator_ceremonies_kind_check CHECK (kind IN ('enroll', 'signin'));
ALTER TABLE operator_enrollments DROP COLUMN withdrawn_at;

-- +goose Up

-- Revision 2. A decision made on an earlier revision
-- still counts exactly when that revision's terms digest equals the
-- current one's, so every revision stores its terms digest: SHA-256 of the
-- RFC 8785 bytes of {"decision_rule", "objective", "rules", "title"} taken
-- from canonical_json. The service computes it when it locks a revision.
ALTER TABLE revisions ADD COLUMN terms_digest text;

-- Existing revisions: the same bytes built here. The keys are fixed, ASCII
-- and already in sorted order; to_json escapes a string as RFC 8785 does
-- (" and \ escaped, \b \f \n \r \t, other control characters as \u00xx in
-- lower case, everything else raw UTF-8), and the members are joined
-- without whitespace; absent rules are []. A test compares this with the
-- service's digest.
UPDATE revisions r
SET terms_digest = encode(sha256(convert_to(
        '{"decision_rule":' || to_json(j.c ->> 'decision_rule')::text
        || ',"objective":' || to_json(j.c ->> 'objective')::text
        || ',"rules":[' || coalesce((SELECT string_agg(to_json(x.v)::text, ',' ORDER BY x.n)
                                     FROM jsonb_array_elements_text(CASE jsonb_typeof(j.c -> 'rules') WHEN 'array' THEN j.c -> 'rules' ELSE '[]' END)
                                          WITH ORDINALITY AS x(v, n)), '')
        || '],"title":' || to_json(j.c ->> 'title')::text || '}',
        'UTF8')), 'hex')
FROM (SELECT agreement_id, number, canonical_json::jsonb AS c FROM revisions) j
WHERE j.agreement_id = r.agreement_id AND j.number = r.number;

ALTER TABLE revisions
    ALTER COLUMN terms_digest SET NOT NULL,
    ADD CONSTRAINT revisions_terms_digest_hex CHECK (terms_digest ~ '^[0-9a-f]{64}$');

-- The outbox also carries the short notice that tells an existing
-- participant a new revision was locked. It holds no secret; a resend
-- supersedes only unsent invitations, never a notice.
ALTER TABLE outbox
    ADD COLUMN kind text NOT NULL DEFAULT 'invitation' CHECK (kind IN ('invitation', 'revision'));

-- +goose Down
ALTER TABLE outbox DROP COLUMN kind;
ALTER TABLE revisions
    DROP CONSTRAINT revisions_terms_digest_hex,
    DROP COLUMN terms_digest;

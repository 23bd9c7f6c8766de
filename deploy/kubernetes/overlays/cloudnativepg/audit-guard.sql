-- The audit guard: binds the owner of audit_entries, which the append-only
-- trigger of migration 00012 does not. The service's role owns its tables
-- (it migrates them), and an owner may disable, drop or rewrite a trigger,
-- or rewrite a column, and then change the entries. These event triggers,
-- which only a superuser can create, alter or drop, refuse to every role but
-- a superuser any DDL on a table named audit_entries, on what belongs to
-- it (triggers, policies, rules, constraints, columns, indexes) or on the
-- function one of its triggers runs, whenever such a table holds an entry
-- at the start of the command: ALTER TABLE … DISABLE TRIGGER, DROP TRIGGER,
-- CREATE OR REPLACE FUNCTION audit_entries_refuse_change(), ALTER COLUMN …
-- TYPE … USING, DROP TABLE, DROP SCHEMA … CASCADE and DROP OWNED alike.
-- While the table is empty (a new database being migrated, a test that
-- migrates down) nothing is refused: there is no entry to protect yet.
--
-- Run it as a superuser in the service's database, before or after its
-- migrations, and again after changing this file; it is idempotent. Event
-- triggers belong to one database: deploy/local/pg.sh runs it in the
-- consensus database and in template1 (so the test suite's databases carry
-- it), and the CloudNativePG overlay at bootstrap (postInitApplicationSQLRefs).
SET client_min_messages = warning;
BEGIN;

DO $$
BEGIN
    IF current_setting('is_superuser') <> 'on' THEN
        RAISE EXCEPTION 'audit-guard.sql must run as a superuser: only a superuser creates event triggers';
    END IF;
END;
$$;

-- Made anew on every run, so that everything in it is this superuser's
-- (a schema of this name restored from a dump by another role is not).
DROP EVENT TRIGGER IF EXISTS consensus_audit_guard_start;
DROP EVENT TRIGGER IF EXISTS consensus_audit_guard_end;
DROP EVENT TRIGGER IF EXISTS consensus_audit_guard_drop;
DROP SCHEMA IF EXISTS consensus_guard CASCADE;
CREATE SCHEMA consensus_guard;
REVOKE ALL ON SCHEMA consensus_guard FROM PUBLIC;
GRANT USAGE ON SCHEMA consensus_guard TO PUBLIC;

-- The tables named audit_entries that hold a row, as an array literal of
-- oids ('{}' when none). It runs as its owner, a superuser, whom row-level
-- security does not bind: the invoking role may see no row of them. ONLY:
-- no child table's code runs.
CREATE OR REPLACE FUNCTION consensus_guard.audit_tables_with_entries() RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t oid;
    found boolean;
    out oid[] := '{}';
BEGIN
    FOR t IN SELECT c.oid FROM pg_class c WHERE c.relname = 'audit_entries' AND c.relkind = 'r' LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM ONLY %s)', t::regclass) INTO found;
        IF found THEN
            out := out || t;
        END IF;
    END LOOP;
    RETURN out::text;
END;
$$;

-- Whether the object (cls, obj) is one of the tables, belongs to one, or is
-- a function one of their triggers runs.
CREATE OR REPLACE FUNCTION consensus_guard.is_audit_object(cls oid, obj oid, tables oid[]) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (cls = 'pg_class'::regclass AND obj = ANY (tables))
        OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = cls AND d.objid = obj
                   AND d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY (tables))
        OR (cls = 'pg_proc'::regclass AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgfoid = obj AND g.tgrelid = ANY (tables)));
$$;

-- At the start of every command: which audit tables hold an entry, kept
-- for the command's end, when a renamed table no longer has its name and
-- a dropped one can no longer be read. The setting is the transaction's,
-- written anew before each command, so a value the client set is never
-- the one read.
CREATE OR REPLACE FUNCTION consensus_guard.audit_start() RETURNS event_trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_setting('is_superuser') = 'on' THEN
        RETURN;
    END IF;
    PERFORM set_config('consensus_guard.audit_tables', consensus_guard.audit_tables_with_entries(), true);
END;
$$;

-- The tables guarded during this command: those its start found holding
-- an entry, and those holding one now. The second read covers a client
-- that rewrites the setting between start and end (in code an ALTER TABLE
-- … USING runs), which leaves the table in place and filled; the first a
-- table renamed or dropped, which no user code can run within.
CREATE OR REPLACE FUNCTION consensus_guard.guarded_tables() RETURNS oid[]
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ARRAY(SELECT unnest(coalesce(nullif(current_setting('consensus_guard.audit_tables', true), ''), '{}')::oid[])
                 UNION SELECT unnest(consensus_guard.audit_tables_with_entries()::oid[]));
$$;

CREATE OR REPLACE FUNCTION consensus_guard.audit_end() RETURNS event_trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tables oid[] := consensus_guard.guarded_tables();
    r record;
BEGIN
    IF current_setting('is_superuser') = 'on' OR cardinality(tables) = 0 THEN
        RETURN;
    END IF;
    FOR r IN SELECT * FROM pg_event_trigger_ddl_commands() LOOP
        IF consensus_guard.is_audit_object(r.classid, r.objid, tables) THEN
            RAISE EXCEPTION 'audit entries are append-only: % on % refused', r.command_tag, r.object_identity
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END LOOP;
END;
$$;

-- A dropped object is gone from the catalogs: it is known by its names
-- (schema, table, then the trigger's, policy's, rule's, constraint's or
-- column's own; schema and name for a function).
CREATE OR REPLACE FUNCTION consensus_guard.audit_drop() RETURNS event_trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    IF current_setting('is_superuser') = 'on' OR cardinality(consensus_guard.guarded_tables()) = 0 THEN
        RETURN;
    END IF;
    FOR r IN SELECT * FROM pg_event_trigger_dropped_objects() LOOP
        IF r.address_names[2] IN ('audit_entries', 'audit_entries_refuse_change') THEN
            RAISE EXCEPTION 'audit entries are append-only: dropping % % refused', r.object_type, r.object_identity
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END LOOP;
END;
$$;

CREATE EVENT TRIGGER consensus_audit_guard_start ON ddl_command_start EXECUTE FUNCTION consensus_guard.audit_start();
CREATE EVENT TRIGGER consensus_audit_guard_end ON ddl_command_end EXECUTE FUNCTION consensus_guard.audit_end();
CREATE EVENT TRIGGER consensus_audit_guard_drop ON sql_drop EXECUTE FUNCTION consensus_guard.audit_drop();

COMMIT;

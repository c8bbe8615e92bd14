-- +goose Up
-- Event payloads of a few KiB are TOASTed, and PostgreSQL's default pglz
-- compression is most of the cost of appending them (a trace.imported
-- payload of 20 steps: ~40% of the COPY into events). lz4 compresses about
-- as well at a fraction of the CPU, and decompresses faster for the relay
-- and stream loads. It changes only how new values are stored: existing rows
-- stay readable as they are, nothing is rewritten, and durability is the
-- same (the table stays logged; this is not a storage-mode change). Servers
-- without lz4 (built without it, or before PostgreSQL 14) keep pglz.
-- +goose StatementBegin
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        BEGIN
            ALTER TABLE events ALTER COLUMN payload SET COMPRESSION lz4;
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
            RAISE NOTICE 'lz4 is not available; event payloads keep pglz compression';
        END;
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        ALTER TABLE events ALTER COLUMN payload SET COMPRESSION default;
    END IF;
END;
$$;
-- +goose StatementEnd

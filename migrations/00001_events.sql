-- +goose Up
-- The event store: the source of truth. Rows are never updated or deleted.
CREATE TABLE events (
    seq            bigserial   PRIMARY KEY,
    id             uuid        NOT NULL UNIQUE,
    stream         text        NOT NULL,
    version        bigint      NOT NULL CHECK (version > 0),
    owner_id       uuid        NOT NULL,
    type           text        NOT NULL,
    actor          text        NOT NULL,
    causation_id   text        NOT NULL DEFAULT '',
    correlation_id text        NOT NULL DEFAULT '',
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    payload        jsonb       NOT NULL,
    UNIQUE (stream, version)
);
CREATE INDEX events_owner_seq ON events (owner_id, seq);
CREATE INDEX events_type_seq ON events (type, seq);

-- Refuse updates and deletes outright, so "immutable" is enforced by the
-- database and not only by convention.
-- +goose StatementBegin
CREATE FUNCTION events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are immutable';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_immutable();

-- Where the relay has published up to, per relay name.
CREATE TABLE relay_cursor (
    name text   PRIMARY KEY,
    seq  bigint NOT NULL
);

-- +goose Down
DROP TABLE relay_cursor;
DROP TRIGGER events_no_update ON events;
DROP FUNCTION events_immutable;
DROP TABLE events;

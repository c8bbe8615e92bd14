-- +goose Up
-- Idempotency-Key records (handlers/idempotency): the first request an
-- account sent with a key, so a retry with the same key gets the original
-- answer instead of a second write. Not a read model: it is no projection of
-- the log (a replay neither rebuilds nor truncates it), it only remembers
-- what the API answered. Rows expire (expires_at, 24 h by default) and are
-- swept by every API instance.
CREATE TABLE idempotency_keys (
    owner_id     uuid        NOT NULL,
    key          text        NOT NULL,
    -- SHA-256 of method, path, query, content type and body: the same key
    -- with a different request is refused (422).
    fingerprint  bytea       NOT NULL,
    method       text        NOT NULL,
    path         text        NOT NULL,
    -- in_flight while the first request runs (its instance renews
    -- lease_until); done once its answer is stored.
    state        text        NOT NULL CHECK (state IN ('in_flight', 'done')),
    lease_until  timestamptz NOT NULL,
    -- The first attempt's request id (the correlation id of the events it
    -- appended) and the log head when it began: whether an attempt whose
    -- instance died had stored anything.
    request_id   text        NOT NULL,
    start_seq    bigint      NOT NULL,
    status       integer,
    header       jsonb,
    body         bytea,
    trailer      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;

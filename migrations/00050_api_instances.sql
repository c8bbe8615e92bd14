-- +goose Up
-- The API instances running now, by instance id (CRITIC_INSTANCE_ID or the
-- id generated into the instance's data directory). Liveness is a session
-- advisory lock the live instance holds (it dies with the instance's
-- database connection, kill -9 included); this row only says who holds it,
-- so a second instance started with the same id is refused with a message
-- naming the first.
CREATE TABLE api_instances (
    instance_id text        PRIMARY KEY,
    host        text        NOT NULL,
    pid         integer     NOT NULL,
    addr        text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE api_instances;

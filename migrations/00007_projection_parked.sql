-- +goose Up
-- Events a projection could not apply after its bounded retries. Each row
-- holds back that owner's later events in that projection (every other
-- owner keeps flowing) until an operator fixes the cause and runs
-- `critic projections retry EVENT_ID`, which sets retry_requested_at; the
-- running projection then applies the event and the owner's held events
-- from the log, and deletes the row. Operational state, not a read model:
-- replays leave it alone.
CREATE TABLE projection_parked (
    projection         text        NOT NULL, -- the consumer group (readmodel, snapshot[-instance], dispatch)
    event_id           uuid        NOT NULL,
    seq                bigint      NOT NULL,
    owner_id           uuid        NOT NULL,
    event_type         text        NOT NULL,
    error              text        NOT NULL,
    attempts           int         NOT NULL,
    parked_at          timestamptz NOT NULL DEFAULT now(),
    retry_requested_at timestamptz,
    PRIMARY KEY (projection, event_id)
);
CREATE INDEX projection_parked_owner ON projection_parked (owner_id, projection);

-- The highest log position each projection has handled (applied, skipped
-- or parked), for `critic projections status`.
CREATE TABLE projection_positions (
    projection text        PRIMARY KEY,
    seq        bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE projection_positions;
DROP TABLE projection_parked;

-- +goose Up
-- Team review (issue 36): how many members judge each review queue item,
-- and the admins' adjudications of disputed targets (the latest per
-- target; the log keeps every one).
ALTER TABLE rm_users ADD COLUMN review_overlap integer NOT NULL DEFAULT 1;
CREATE TABLE rm_adjudications (
    id             uuid        PRIMARY KEY,
    owner_id       uuid        NOT NULL,
    trace_id       uuid        NOT NULL,
    step_id        uuid,
    criterion_id   uuid,
    rating         smallint,
    value          jsonb,
    reason         text        NOT NULL,
    adjudicated_by text        NOT NULL,
    trace_revision integer     NOT NULL,
    created_at     timestamptz NOT NULL
);
CREATE INDEX rm_adjudications_trace ON rm_adjudications (trace_id);
CREATE INDEX rm_adjudications_owner ON rm_adjudications (owner_id);

-- +goose Down
DROP TABLE rm_adjudications;
ALTER TABLE rm_users DROP COLUMN review_overlap;

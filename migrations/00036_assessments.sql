-- +goose Up
-- Section summaries and completion estimates by trace, kind and cache key
-- (evidence hash + exact ranges + assessment version): pending while a
-- request's lease runs, done with the generated result, failed with the
-- reason. Requests, results and failures are events on the trace's stream.
CREATE TABLE rm_assessments (
    trace_id      uuid        NOT NULL,
    kind          text        NOT NULL,
    key           text        NOT NULL,
    version       text        NOT NULL,
    state         text        NOT NULL,
    result        jsonb,
    error         text,
    model         text,
    requested_at  timestamptz,
    lease_seconds integer     NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (trace_id, kind, key)
);

-- +goose Down
DROP TABLE rm_assessments;

-- +goose Up
CREATE TABLE rm_trace_sources (
    owner_id  uuid NOT NULL,
    source_id text NOT NULL,
    name      text NOT NULL,
    PRIMARY KEY (owner_id, source_id)
);

-- +goose Down
DROP TABLE rm_trace_sources;

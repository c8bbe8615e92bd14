-- +goose Up
CREATE TABLE rm_annotations (
    id               uuid        PRIMARY KEY,
    trace_id         uuid        NOT NULL,
    owner_id         uuid        NOT NULL,
    step_id          uuid,
    rating           smallint,
    comment          text,
    quote            jsonb,
    label_error      boolean     NOT NULL DEFAULT false,
    label_error_note text,
    author_id        uuid        NOT NULL,
    author_name      text        NOT NULL,
    trace_revision   integer     NOT NULL,
    created_at       timestamptz NOT NULL,
    seq              bigint      NOT NULL
);
CREATE INDEX rm_annotations_trace ON rm_annotations (trace_id, seq);
CREATE INDEX rm_annotations_owner ON rm_annotations (owner_id, seq);

-- +goose Down
DROP TABLE rm_annotations;

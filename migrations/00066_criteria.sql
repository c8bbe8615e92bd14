-- +goose Up
-- Structured criteria (issue 33): an account's criterion definitions, its
-- review guidelines, and the criterion values among the annotations
-- (criterion_id and value set, rating and comment NULL). Built from the
-- criterion.*, guidelines.set and annotation events; no event before this
-- migration carries any, so nothing is backfilled.
CREATE TABLE rm_criteria (
    id          uuid        PRIMARY KEY,
    owner_id    uuid        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL,
    kind        text        NOT NULL,
    labels      jsonb       NOT NULL,
    scale_max   integer,
    applies_to  text        NOT NULL,
    archived    boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL,
    seq         bigint      NOT NULL
);
CREATE INDEX rm_criteria_owner ON rm_criteria (owner_id, seq);
CREATE TABLE rm_guidelines (
    owner_id   uuid        PRIMARY KEY,
    markdown   text        NOT NULL,
    updated_at timestamptz NOT NULL
);
ALTER TABLE rm_annotations ADD COLUMN criterion_id uuid, ADD COLUMN value jsonb;

-- +goose Down
ALTER TABLE rm_annotations DROP COLUMN value, DROP COLUMN criterion_id;
DROP TABLE rm_guidelines;
DROP TABLE rm_criteria;

-- +goose Up
-- Retention (issue 37): an account's retention period in days (NULL: off).
-- The sweep and the dry-run read an account's traces by last activity
-- through rm_traces_owner_updated (00069).
ALTER TABLE rm_users ADD COLUMN retention_days integer;

-- +goose Down
ALTER TABLE rm_users DROP COLUMN retention_days;

-- +goose Up
-- An account's members (issue 36). Every account has at least its implicit
-- admin (member id = the account's id, its name), which the user.created
-- applier writes and this backfills for accounts created before members.
CREATE TABLE rm_members (
    owner_id   uuid        NOT NULL,
    member_id  uuid        NOT NULL,
    name       text        NOT NULL,
    role       text        NOT NULL,
    created_at timestamptz NOT NULL,
    removed    boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (owner_id, member_id)
);
INSERT INTO rm_members (owner_id, member_id, name, role, created_at)
    SELECT id, id, name, 'admin', created_at FROM rm_users;
-- A key's member; NULL (keys issued before members) is the implicit admin.
ALTER TABLE rm_api_keys ADD COLUMN member_id uuid;

-- +goose Down
ALTER TABLE rm_api_keys DROP COLUMN member_id;
DROP TABLE rm_members;

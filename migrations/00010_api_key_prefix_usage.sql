-- +goose Up
-- Keys are listed by a recognisable prefix (never the key) and revocation
-- time; both come from events, so a replay rebuilds them.
ALTER TABLE rm_api_keys ADD COLUMN key_prefix text;
ALTER TABLE rm_api_keys ADD COLUMN revoked_at timestamptz;
CREATE INDEX rm_api_keys_user ON rm_api_keys (user_id);

-- When a key was last used. Operational telemetry, not a fact of the domain:
-- it is not an event, a replay neither rebuilds nor clears it, and it is
-- written at most once a minute per key and API instance.
CREATE TABLE api_key_usage (
    key_id       uuid        PRIMARY KEY,
    last_used_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE api_key_usage;
DROP INDEX rm_api_keys_user;
ALTER TABLE rm_api_keys DROP COLUMN revoked_at;
ALTER TABLE rm_api_keys DROP COLUMN key_prefix;

-- +goose Up
-- Crypto-shredding (platform/keyring): one AES-256 data key per scope
-- ("trace/<id>"), wrapped (nonce || AES-GCM) by the master key. Erasing a
-- scope sets wrapped to NULL and destroyed_at: the row stays as a tombstone
-- so readers tell "erased" from "never existed" and no key is made again.
CREATE TABLE data_keys (
    scope        text PRIMARY KEY,
    key_id       text NOT NULL,
    wrapped      bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    destroyed_at timestamptz,
    CHECK ((wrapped IS NULL) = (destroyed_at IS NOT NULL))
);

-- +goose Down
DROP TABLE data_keys;

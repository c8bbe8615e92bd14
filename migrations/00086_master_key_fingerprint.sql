-- +goose Up
-- The master key's fingerprint (platform/keyring: HMAC-SHA256 of a constant
-- under the key), recorded by the first process to start: a process given
-- another key refuses to start rather than make data keys no other process
-- opens. `critic keys rotate` replaces it with the new key's.
CREATE TABLE master_key_fingerprint (
    id          boolean     PRIMARY KEY DEFAULT true CHECK (id),
    fingerprint bytea       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE master_key_fingerprint;

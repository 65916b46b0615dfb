-- Passkeys (mirobody_ports::passkeys): WebAuthn credentials people sign in with. credential is
-- the serialised credential (public key, counter) as the sign-in pages write it, opaque here.
-- An insert counts the account's passkeys in the same statement, so the bound holds.
CREATE TABLE passkeys (
    credential_id   BLOB PRIMARY KEY,
    account_id      TEXT NOT NULL,
    credential      TEXT NOT NULL,
    name            TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    last_used_at_ms BIGINT
);
CREATE INDEX passkeys_account ON passkeys (account_id, created_at_ms);

-- A ceremony's state between its begin and finish requests, under the SHA-256 of an id only
-- the browser holds. It is taken with one DELETE ... RETURNING, so it finishes once; owner (an
-- account, or an address signing in) bounds how many one holds at a time.
CREATE TABLE passkey_ceremonies (
    id_hash       BLOB PRIMARY KEY,
    purpose       TEXT NOT NULL,
    owner         TEXT NOT NULL,
    state         TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX passkey_ceremonies_owner ON passkey_ceremonies (owner, expires_at_ms);
CREATE INDEX passkey_ceremonies_expiry ON passkey_ceremonies (expires_at_ms);

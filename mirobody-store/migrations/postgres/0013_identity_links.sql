-- Sign-in through an operator's OpenID provider (mirobody_ports::identities). A provider's
-- subject names one account; an account may have several. A link goes with its account.
CREATE TABLE identity_links (
    provider      TEXT NOT NULL,
    subject       TEXT NOT NULL,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email         TEXT,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX identity_links_account ON identity_links (account_id);

-- A sign-in between the redirect to the provider and its return, under the SHA-256 of its
-- state: taken once by one DELETE ... RETURNING, so any instance may receive the return.
CREATE TABLE upstream_logins (
    state_hash    BYTEA PRIMARY KEY,
    provider      TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    nonce         TEXT NOT NULL,
    next_path     TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX upstream_logins_expiry ON upstream_logins (expires_at_ms);

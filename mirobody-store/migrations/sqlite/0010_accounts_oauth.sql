-- Sign-in (mirobody_ports::accounts) and the OAuth 2.1 authorization server
-- (mirobody_ports::oauth). An account's id is the users id its health data is kept under.
-- Session tokens, codes, refresh tokens and client secrets are random values only their
-- holders know: the tables keep their SHA-256, so a copy of the database opens nothing.
CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    display_name  TEXT,
    password_hash TEXT,
    disabled      INTEGER NOT NULL DEFAULT 0,
    created_at_ms BIGINT NOT NULL
);

CREATE TABLE web_sessions (
    token_hash    BLOB PRIMARY KEY,
    account_id    TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX web_sessions_account ON web_sessions (account_id);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at_ms);

-- redirect_uris is a JSON array of strings. registered_from and created_at_ms bound how many
-- clients one address registers.
CREATE TABLE oauth_clients (
    client_id       TEXT PRIMARY KEY,
    client_name     TEXT,
    client_uri      TEXT,
    redirect_uris   TEXT NOT NULL,
    secret_hash     BLOB,
    registered_from TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL
);
CREATE INDEX oauth_clients_registered ON oauth_clients (registered_from, created_at_ms);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at_ms);

-- scopes are space-joined, as in OAuth.
CREATE TABLE oauth_grants (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    client_id       TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    resource        TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    last_used_at_ms BIGINT,
    revoked_at_ms   BIGINT
);
CREATE INDEX oauth_grants_account ON oauth_grants (account_id, created_at_ms);
CREATE INDEX oauth_grants_revoked ON oauth_grants (revoked_at_ms);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- A code is taken in one UPDATE (used_at_ms IS NULL), so of two redemptions one wins; the
-- used row stays until it expires, to tell a replay from an unknown code.
CREATE TABLE oauth_codes (
    code_hash      BLOB PRIMARY KEY,
    grant_id       TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at_ms  BIGINT NOT NULL,
    used_at_ms     BIGINT
);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at_ms);

-- A rotated token stays, used, until it expires: a second use of it is a stolen copy.
CREATE TABLE oauth_refresh_tokens (
    token_hash    BLOB PRIMARY KEY,
    grant_id      TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms    BIGINT
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expires_at_ms);

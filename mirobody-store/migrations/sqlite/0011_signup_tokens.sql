-- Sign-up links (mirobody_ports::accounts::SignupToken): a care-circle invitation to an email
-- with no account gives the inviter a link that makes that account. Only the token's SHA-256
-- is kept. A token is taken in one UPDATE (used_at_ms IS NULL), so of two uses one wins; the
-- used row stays until it expires, and invited_by bounds how many live ones one person holds.
CREATE TABLE signup_tokens (
    token_hash    BLOB PRIMARY KEY,
    email         TEXT NOT NULL,
    invited_by    TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms    BIGINT
);
CREATE INDEX signup_tokens_inviter ON signup_tokens (invited_by, expires_at_ms);
CREATE INDEX signup_tokens_expiry ON signup_tokens (expires_at_ms);

-- Links to the upload page (mirobody_tools::upload_links). A link is a random id that only
-- its holder knows; the table keeps its SHA-256, so a copy of the database opens no link. A
-- use is taken in one UPDATE (uses_left > 0), so a single-use link stores one file however
-- many uploads race on it. Revoked and used-up rows stay until they expire, to tell their
-- holder why the link no longer works; expired rows go when a new link is made.
CREATE TABLE upload_links (
    token_hash BLOB PRIMARY KEY,
    user_id TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    uses_left BIGINT NOT NULL,
    revoked_ms BIGINT
);
CREATE INDEX upload_links_user ON upload_links (user_id, expires_ms);
CREATE INDEX upload_links_expiry ON upload_links (expires_ms);

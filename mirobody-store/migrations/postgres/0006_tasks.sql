-- Tasks of the MCP tasks extension (mirobody_core::TaskRecord): a call running in the
-- background, polled and cancelled by its owner only. A finished task keeps its outcome here
-- until it expires, so another instance, or this one after a restart, still answers for it; a
-- task not ended whose lease has passed was running in a process that is gone.
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    state TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    lease_until_ms BIGINT NOT NULL,
    input_requests TEXT,
    outcome TEXT
);
CREATE INDEX tasks_owner ON tasks (owner, state);
CREATE INDEX tasks_expiry ON tasks (expires_ms);

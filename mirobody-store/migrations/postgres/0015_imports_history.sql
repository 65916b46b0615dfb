-- mirobody schema 15 (PostgreSQL): imports as things, and the history corrections keep.

-- One import of a person's: how it arrived, from which file, when, and what it did. Every value
-- it stored names it (import_id); values stored before this migration name none.
CREATE TABLE imports (
    id            BIGSERIAL PRIMARY KEY,
    subject       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    file_key      TEXT,
    via           TEXT,
    created_at_ms BIGINT NOT NULL,
    stored        BIGINT NOT NULL DEFAULT 0,
    updated       BIGINT NOT NULL DEFAULT 0,
    removed       BIGINT NOT NULL DEFAULT 0,
    unchanged     BIGINT NOT NULL DEFAULT 0,
    skipped       BIGINT NOT NULL DEFAULT 0,
    invalid       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX imports_subject ON imports (subject, id);

-- The import of each value, and the version it says it is (meta.versionId, meta.lastUpdated),
-- which decides whether a resource re-sent with the same source id replaces it.
ALTER TABLE observations ADD COLUMN import_id BIGINT;
ALTER TABLE observations ADD COLUMN version_id TEXT;
ALTER TABLE observations ADD COLUMN last_updated_ms BIGINT;
CREATE INDEX observations_import ON observations (subject, import_id);
ALTER TABLE health_points ADD COLUMN import_id BIGINT;
ALTER TABLE health_records ADD COLUMN import_id BIGINT;
ALTER TABLE health_records ADD COLUMN version_id TEXT;
ALTER TABLE health_records ADD COLUMN last_updated_ms BIGINT;
CREATE INDEX health_records_import ON health_records (subject, import_id);

-- Versions no read returns: replaced by a newer one, or removed (entered-in-error, deleted),
-- each with the import that ended it, so deleting that import serves them again.
CREATE TABLE observation_history (
    id              BIGSERIAL PRIMARY KEY,
    subject         TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    code            TEXT NOT NULL,
    effective_ms    BIGINT NOT NULL,
    resource        TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    file_key        TEXT,
    import_id       BIGINT,
    version_id      TEXT,
    last_updated_ms BIGINT,
    ended_by        BIGINT,
    reason          TEXT NOT NULL,
    ended_at_ms     BIGINT NOT NULL
);
CREATE INDEX observation_history_source ON observation_history (subject, source_id);
CREATE INDEX observation_history_import ON observation_history (subject, import_id);
CREATE INDEX observation_history_ended ON observation_history (subject, ended_by);
-- The values of a version in observation_history, as health_points held them.
CREATE TABLE health_point_history (
    history_id BIGINT NOT NULL REFERENCES observation_history (id) ON DELETE CASCADE,
    code       TEXT NOT NULL,
    display    TEXT NOT NULL,
    time_ms    BIGINT NOT NULL,
    value      DOUBLE PRECISION,
    value_text TEXT,
    unit       TEXT,
    file_key   TEXT
);
CREATE INDEX health_point_history_of ON health_point_history (history_id);
CREATE TABLE record_history (
    id              BIGSERIAL PRIMARY KEY,
    subject         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    display         TEXT NOT NULL,
    status          TEXT,
    time_ms         BIGINT,
    resource        TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    detail          TEXT,
    import_id       BIGINT,
    version_id      TEXT,
    last_updated_ms BIGINT,
    ended_by        BIGINT,
    reason          TEXT NOT NULL,
    ended_at_ms     BIGINT NOT NULL
);
CREATE INDEX record_history_source ON record_history (subject, kind, source_id);
CREATE INDEX record_history_import ON record_history (subject, import_id);
CREATE INDEX record_history_ended ON record_history (subject, ended_by);

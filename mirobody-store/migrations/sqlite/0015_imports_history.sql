-- mirobody schema 15 (SQLite): imports as things, and the history corrections keep.

-- One import of a person's: how it arrived, from which file, when, and what it did. Every value
-- it stored names it (import_id); values stored before this migration name none.
CREATE TABLE imports (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    file_key      TEXT,
    via           TEXT,
    created_at_ms INTEGER NOT NULL,
    stored        INTEGER NOT NULL DEFAULT 0,
    updated       INTEGER NOT NULL DEFAULT 0,
    removed       INTEGER NOT NULL DEFAULT 0,
    unchanged     INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0,
    invalid       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX imports_subject ON imports (subject, id);

-- The import of each value, and the version it says it is (meta.versionId, meta.lastUpdated),
-- which decides whether a resource re-sent with the same source id replaces it.
ALTER TABLE observations ADD COLUMN import_id INTEGER;
ALTER TABLE observations ADD COLUMN version_id TEXT;
ALTER TABLE observations ADD COLUMN last_updated_ms INTEGER;
CREATE INDEX observations_import ON observations (subject, import_id);
ALTER TABLE health_points ADD COLUMN import_id INTEGER;
ALTER TABLE health_records ADD COLUMN import_id INTEGER;
ALTER TABLE health_records ADD COLUMN version_id TEXT;
ALTER TABLE health_records ADD COLUMN last_updated_ms INTEGER;
CREATE INDEX health_records_import ON health_records (subject, import_id);

-- Versions no read returns: replaced by a newer one, or removed (entered-in-error, deleted),
-- each with the import that ended it, so deleting that import serves them again.
CREATE TABLE observation_history (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subject         TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    code            TEXT NOT NULL,
    effective_ms    INTEGER NOT NULL,
    resource        TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    file_key        TEXT,
    import_id       INTEGER,
    version_id      TEXT,
    last_updated_ms INTEGER,
    ended_by        INTEGER,
    reason          TEXT NOT NULL,
    ended_at_ms     INTEGER NOT NULL
);
CREATE INDEX observation_history_source ON observation_history (subject, source_id);
CREATE INDEX observation_history_import ON observation_history (subject, import_id);
CREATE INDEX observation_history_ended ON observation_history (subject, ended_by);
-- The values of a version in observation_history, as health_points held them.
CREATE TABLE health_point_history (
    history_id INTEGER NOT NULL REFERENCES observation_history (id) ON DELETE CASCADE,
    code       TEXT NOT NULL,
    display    TEXT NOT NULL,
    time_ms    INTEGER NOT NULL,
    value      REAL,
    value_text TEXT,
    unit       TEXT,
    file_key   TEXT
);
CREATE INDEX health_point_history_of ON health_point_history (history_id);
CREATE TABLE record_history (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    subject         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    source_id       TEXT NOT NULL,
    display         TEXT NOT NULL,
    status          TEXT,
    time_ms         INTEGER,
    resource        TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    detail          TEXT,
    import_id       INTEGER,
    version_id      TEXT,
    last_updated_ms INTEGER,
    ended_by        INTEGER,
    reason          TEXT NOT NULL,
    ended_at_ms     INTEGER NOT NULL
);
CREATE INDEX record_history_source ON record_history (subject, kind, source_id);
CREATE INDEX record_history_import ON record_history (subject, import_id);
CREATE INDEX record_history_ended ON record_history (subject, ended_by);

-- mirobody schema 1 (SQLite). Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    display_name  TEXT,
    email         TEXT,
    created_at_ms INTEGER NOT NULL
);

-- owner shares their health data with reader, who calls them nickname.
CREATE TABLE health_shares (
    reader        TEXT NOT NULL,
    owner         TEXT NOT NULL,
    nickname      TEXT,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (reader, owner)
);

-- FHIR Observations: the resource as JSON, with the columns searches use.
CREATE TABLE observations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject       TEXT NOT NULL,
    code          TEXT NOT NULL,
    effective_ms  INTEGER NOT NULL,
    resource      TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX observations_subject_time ON observations (subject, effective_ms DESC, id DESC);
CREATE INDEX observations_subject_code_time ON observations (subject, code, effective_ms DESC);

-- How many observations each subject has, kept by triggers so a page never counts rows.
CREATE TABLE observation_totals (
    subject TEXT PRIMARY KEY,
    total   INTEGER NOT NULL
);
CREATE TRIGGER observations_count_insert AFTER INSERT ON observations BEGIN
    INSERT OR IGNORE INTO observation_totals (subject, total) VALUES (new.subject, 0);
    UPDATE observation_totals SET total = total + 1 WHERE subject = new.subject;
END;
CREATE TRIGGER observations_count_delete AFTER DELETE ON observations BEGIN
    UPDATE observation_totals SET total = total - 1 WHERE subject = old.subject;
END;

CREATE TABLE files (
    file_key       TEXT PRIMARY KEY,
    owner          TEXT NOT NULL,
    filename       TEXT NOT NULL,
    mime_type      TEXT NOT NULL,
    size           INTEGER NOT NULL,
    text_key       TEXT,
    uploaded_at_ms INTEGER NOT NULL
);
CREATE INDEX files_owner_time ON files (owner, uploaded_at_ms DESC);

CREATE TABLE conversations (
    owner         TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    summary       TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (owner, session_id)
);

-- Long-term memory; owner_tag is a digits-only token of the owner, indexed in the full-text
-- table so a search is scoped to one owner inside FTS5 itself.
CREATE TABLE memories (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner         TEXT NOT NULL,
    owner_tag     TEXT NOT NULL,
    text          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    session_id    TEXT,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX memories_owner ON memories (owner, id);
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    text, owner_tag,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, owner_tag) VALUES (new.id, new.text, new.owner_tag);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, owner_tag) VALUES ('delete', old.id, old.text, old.owner_tag);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, owner_tag) VALUES ('delete', old.id, old.text, old.owner_tag);
    INSERT INTO memories_fts (rowid, text, owner_tag) VALUES (new.id, new.text, new.owner_tag);
END;

-- Personal MCP secrets, as SHA-256 hashes only; one live secret per user.
CREATE TABLE personal_secrets (
    user_id       TEXT PRIMARY KEY,
    secret_hash   BLOB NOT NULL UNIQUE,
    agent         TEXT,
    created_at_ms INTEGER NOT NULL
);

-- kind: 1 = tool call, 2 = resource read.
CREATE TABLE access_log (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       TEXT NOT NULL,
    kind          INTEGER NOT NULL,
    name          TEXT NOT NULL,
    success       INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX access_log_user_time ON access_log (user_id, created_at_ms);

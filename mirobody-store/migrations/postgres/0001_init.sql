-- mirobody schema 1 (PostgreSQL). Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    display_name  TEXT,
    email         TEXT,
    created_at_ms BIGINT NOT NULL
);

-- owner shares their health data with reader, who calls them nickname.
CREATE TABLE health_shares (
    reader        TEXT NOT NULL,
    owner         TEXT NOT NULL,
    nickname      TEXT,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (reader, owner)
);

-- FHIR Observations: the resource as JSON, with the columns searches use.
CREATE TABLE observations (
    id            BIGSERIAL PRIMARY KEY,
    subject       TEXT NOT NULL,
    code          TEXT NOT NULL,
    effective_ms  BIGINT NOT NULL,
    resource      TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE INDEX observations_subject_time ON observations (subject, effective_ms DESC, id DESC);
CREATE INDEX observations_subject_code_time ON observations (subject, code, effective_ms DESC);

-- How many observations each subject has, kept by a trigger so a page never counts rows.
CREATE TABLE observation_totals (
    subject TEXT PRIMARY KEY,
    total   BIGINT NOT NULL
);
CREATE FUNCTION mirobody_count_observation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO observation_totals AS t (subject, total) VALUES (NEW.subject, 1)
            ON CONFLICT (subject) DO UPDATE SET total = t.total + 1;
        RETURN NEW;
    END IF;
    UPDATE observation_totals SET total = total - 1 WHERE subject = OLD.subject;
    RETURN OLD;
END
$$;
CREATE TRIGGER observations_count AFTER INSERT OR DELETE ON observations
    FOR EACH ROW EXECUTE FUNCTION mirobody_count_observation();

CREATE TABLE files (
    file_key       TEXT PRIMARY KEY,
    owner          TEXT NOT NULL,
    filename       TEXT NOT NULL,
    mime_type      TEXT NOT NULL,
    size           BIGINT NOT NULL,
    text_key       TEXT,
    uploaded_at_ms BIGINT NOT NULL
);
CREATE INDEX files_owner_time ON files (owner, uploaded_at_ms DESC);

CREATE TABLE conversations (
    owner         TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    summary       TEXT,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (owner, session_id)
);

-- Long-term memory with ranked full-text search (tsvector, GIN).
CREATE TABLE memories (
    id            BIGSERIAL PRIMARY KEY,
    owner         TEXT NOT NULL,
    owner_tag     TEXT NOT NULL,
    text          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    session_id    TEXT,
    created_at_ms BIGINT NOT NULL,
    tsv           tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX memories_owner ON memories (owner, id);
CREATE INDEX memories_tsv ON memories USING GIN (tsv);

-- Personal MCP secrets, as SHA-256 hashes only; one live secret per user.
CREATE TABLE personal_secrets (
    user_id       TEXT PRIMARY KEY,
    secret_hash   BYTEA NOT NULL UNIQUE,
    agent         TEXT,
    created_at_ms BIGINT NOT NULL
);

-- kind: 1 = tool call, 2 = resource read.
CREATE TABLE access_log (
    id            BIGSERIAL PRIMARY KEY,
    user_id       TEXT NOT NULL,
    kind          BIGINT NOT NULL,
    name          TEXT NOT NULL,
    success       BOOLEAN NOT NULL,
    duration_ms   BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
CREATE INDEX access_log_user_time ON access_log (user_id, created_at_ms);

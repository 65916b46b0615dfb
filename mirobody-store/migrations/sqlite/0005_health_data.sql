-- mirobody schema 5 (SQLite): a person's health data, in and out.

-- Where an Observation came from: the id it had at its source (so a second import of the same
-- resource adds nothing) and the uploaded file it was read from. Rows stored before this
-- migration keep both NULL, which the unique index lets repeat.
ALTER TABLE observations ADD COLUMN source_id TEXT;
ALTER TABLE observations ADD COLUMN file_key TEXT;
CREATE UNIQUE INDEX observations_subject_source ON observations (subject, source_id);

-- One value of one indicator at one time, read from an Observation (one per component of a
-- blood pressure): what the series queries read, without parsing resources.
CREATE TABLE health_points (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    subject        TEXT NOT NULL,
    observation_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    code           TEXT NOT NULL,
    display        TEXT NOT NULL,
    time_ms        INTEGER NOT NULL,
    value          REAL,
    value_text     TEXT,
    unit           TEXT,
    file_key       TEXT
);
CREATE INDEX health_points_series ON health_points (subject, code, time_ms, id);
CREATE INDEX health_points_observation ON health_points (observation_id);

-- What each person has of each indicator (one row per code and unit, '' for none), kept by
-- triggers so that listing a person's indicators never reads their values.
CREATE TABLE health_indicators (
    subject  TEXT NOT NULL,
    code     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    display  TEXT NOT NULL,
    n        INTEGER NOT NULL,
    first_ms INTEGER NOT NULL,
    last_ms  INTEGER NOT NULL,
    PRIMARY KEY (subject, code, unit)
);
CREATE TRIGGER health_points_summary_insert AFTER INSERT ON health_points BEGIN
    INSERT INTO health_indicators (subject, code, unit, display, n, first_ms, last_ms)
        VALUES (new.subject, new.code, COALESCE(new.unit, ''), new.display, 1, new.time_ms, new.time_ms)
        ON CONFLICT (subject, code, unit) DO UPDATE SET n = n + 1, display = excluded.display,
            first_ms = MIN(first_ms, excluded.first_ms), last_ms = MAX(last_ms, excluded.last_ms);
END;
-- A removed value is no longer counted; its times may still bound first_ms and last_ms.
CREATE TRIGGER health_points_summary_delete AFTER DELETE ON health_points BEGIN
    UPDATE health_indicators SET n = n - 1
        WHERE subject = old.subject AND code = old.code AND unit = COALESCE(old.unit, '');
    DELETE FROM health_indicators
        WHERE subject = old.subject AND code = old.code AND unit = COALESCE(old.unit, '') AND n <= 0;
END;

-- Conditions, medications and allergies, for the profile.
CREATE TABLE health_records (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    subject       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    display       TEXT NOT NULL,
    status        TEXT,
    time_ms       INTEGER,
    resource      TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (subject, kind, source_id)
);

-- owner offers to share their health data with invitee (a user id, or a lower-case email when
-- by_email is 1); accepting turns it into a health_shares row.
CREATE TABLE circle_invites (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    owner         TEXT NOT NULL,
    invitee       TEXT NOT NULL,
    by_email      INTEGER NOT NULL,
    nickname      TEXT,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (owner, invitee)
);
CREATE INDEX circle_invites_invitee ON circle_invites (invitee);
CREATE INDEX health_shares_owner ON health_shares (owner);
-- @fill-health-points

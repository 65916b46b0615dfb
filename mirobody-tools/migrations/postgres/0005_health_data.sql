-- mirobody schema 5 (PostgreSQL): a person's health data, in and out.

-- Where an Observation came from: the id it had at its source (so a second import of the same
-- resource adds nothing) and the uploaded file it was read from. Rows stored before this
-- migration keep both NULL, which the unique index lets repeat.
ALTER TABLE observations ADD COLUMN source_id TEXT;
ALTER TABLE observations ADD COLUMN file_key TEXT;
CREATE UNIQUE INDEX observations_subject_source ON observations (subject, source_id);

-- One value of one indicator at one time, read from an Observation (one per component of a
-- blood pressure): what the series queries read, without parsing resources.
CREATE TABLE health_points (
    id             BIGSERIAL PRIMARY KEY,
    subject        TEXT NOT NULL,
    observation_id BIGINT NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    code           TEXT NOT NULL,
    display        TEXT NOT NULL,
    time_ms        BIGINT NOT NULL,
    value          DOUBLE PRECISION,
    value_text     TEXT,
    unit           TEXT,
    file_key       TEXT
);
CREATE INDEX health_points_series ON health_points (subject, code, time_ms);
CREATE INDEX health_points_observation ON health_points (observation_id);

-- Conditions, medications and allergies, for the profile.
CREATE TABLE health_records (
    id            BIGSERIAL PRIMARY KEY,
    subject       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    source_id     TEXT NOT NULL,
    display       TEXT NOT NULL,
    status        TEXT,
    time_ms       BIGINT,
    resource      TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    UNIQUE (subject, kind, source_id)
);

-- owner offers to share their health data with invitee (a user id, or a lower-case email when
-- by_email is 1); accepting turns it into a health_shares row.
CREATE TABLE circle_invites (
    id            BIGSERIAL PRIMARY KEY,
    owner         TEXT NOT NULL,
    invitee       TEXT NOT NULL,
    by_email      BOOLEAN NOT NULL,
    nickname      TEXT,
    created_at_ms BIGINT NOT NULL,
    UNIQUE (owner, invitee)
);
CREATE INDEX circle_invites_invitee ON circle_invites (invitee);
CREATE INDEX health_shares_owner ON health_shares (owner);
-- @fill-health-points

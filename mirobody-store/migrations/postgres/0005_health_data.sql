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
CREATE INDEX health_points_series ON health_points (subject, code, time_ms, id);
CREATE INDEX health_points_observation ON health_points (observation_id);

-- What each person has of each indicator (one row per code and unit, '' for none), kept by a
-- trigger so that listing a person's indicators never reads their values.
CREATE TABLE health_indicators (
    subject  TEXT NOT NULL,
    code     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    display  TEXT NOT NULL,
    n        BIGINT NOT NULL,
    first_ms BIGINT NOT NULL,
    last_ms  BIGINT NOT NULL,
    PRIMARY KEY (subject, code, unit)
);
-- A removed value is no longer counted; its times may still bound first_ms and last_ms.
CREATE FUNCTION mirobody_summarize_health_point() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO health_indicators AS s (subject, code, unit, display, n, first_ms, last_ms)
            VALUES (NEW.subject, NEW.code, COALESCE(NEW.unit, ''), NEW.display, 1, NEW.time_ms, NEW.time_ms)
            ON CONFLICT (subject, code, unit) DO UPDATE SET n = s.n + 1, display = EXCLUDED.display,
                first_ms = LEAST(s.first_ms, EXCLUDED.first_ms), last_ms = GREATEST(s.last_ms, EXCLUDED.last_ms);
        RETURN NEW;
    END IF;
    UPDATE health_indicators SET n = n - 1
        WHERE subject = OLD.subject AND code = OLD.code AND unit = COALESCE(OLD.unit, '');
    DELETE FROM health_indicators
        WHERE subject = OLD.subject AND code = OLD.code AND unit = COALESCE(OLD.unit, '') AND n <= 0;
    RETURN OLD;
END;
$$;
CREATE TRIGGER health_points_summary AFTER INSERT OR DELETE ON health_points
    FOR EACH ROW EXECUTE FUNCTION mirobody_summarize_health_point();

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

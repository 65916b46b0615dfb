-- Whose data an access read, when it was someone else's (a care-circle member's): NULL for
-- an access to one's own data, and for every row written before this migration. A person
-- lists the reads of their data by `subject`, newest first; the log is purged by age.
ALTER TABLE access_log ADD COLUMN subject TEXT;
CREATE INDEX access_log_subject ON access_log (subject, id);
CREATE INDEX access_log_time ON access_log (created_at_ms);

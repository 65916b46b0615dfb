-- The text of a PDF or Word upload is read after the upload is answered, by a sandboxed
-- reader fed from a per-person queue. text_state: 0 = settled (text_key says whether there is
-- text), 1 = waiting to be read, 2 = unreadable (text_error says why). A waiting file is
-- claimed by one reader until text_claimed_until_ms; a claim that lapses (its process died) is
-- taken again, at most a few times (text_attempts), so queued work resumes after a restart.
ALTER TABLE files ADD COLUMN text_state INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN text_error TEXT;
ALTER TABLE files ADD COLUMN text_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN text_claimed_until_ms BIGINT;
CREATE INDEX files_text_waiting ON files (owner, uploaded_at_ms) WHERE text_state = 1;

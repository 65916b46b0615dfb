-- What came of each access, refused attempts included: ok, failed, unknown_tool, hidden,
-- forbidden, invalid_arguments (mirobody_core::AccessOutcome::as_str). Rows written before
-- this migration keep it NULL and read as ok or failed from `success`, so the migration does
-- not rewrite the table; `success` stays, true exactly when the outcome is ok.
ALTER TABLE access_log ADD COLUMN outcome TEXT;

-- What a chart record shows besides its name, status and time (a medication's dosage, a
-- report's results and attachments), as JSON text; older rows have none.
ALTER TABLE health_records ADD COLUMN detail TEXT;

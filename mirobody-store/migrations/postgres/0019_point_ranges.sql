-- The reference range a value's source gave with it (a FHIR Observation's referenceRange:
-- its bounds, their unit and its text) and what the source said of the value (its
-- interpretation: H, L, HH, LL, N, A...), so "out of range" is answered from the data. Values
-- stored before this migration have none, and are judged against the catalog's ranges.
ALTER TABLE health_points ADD COLUMN ref_low DOUBLE PRECISION;
ALTER TABLE health_points ADD COLUMN ref_high DOUBLE PRECISION;
ALTER TABLE health_points ADD COLUMN ref_unit TEXT;
ALTER TABLE health_points ADD COLUMN ref_text TEXT;
ALTER TABLE health_points ADD COLUMN interpretation TEXT;
-- A replaced value keeps them in the history, to come back with it when its import is undone.
ALTER TABLE health_point_history ADD COLUMN ref_low DOUBLE PRECISION;
ALTER TABLE health_point_history ADD COLUMN ref_high DOUBLE PRECISION;
ALTER TABLE health_point_history ADD COLUMN ref_unit TEXT;
ALTER TABLE health_point_history ADD COLUMN ref_text TEXT;
ALTER TABLE health_point_history ADD COLUMN interpretation TEXT;

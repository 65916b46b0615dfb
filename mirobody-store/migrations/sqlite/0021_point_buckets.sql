-- The values of one indicator in one unit over a time range, read from the index alone: what
-- the hourly and daily sums of `fetch_health_trends` scan, a year of minute values at a time,
-- without a table lookup per value. The series index (subject, code, time_ms, id) stays for
-- the newest-first reads of single values.
CREATE INDEX health_points_buckets ON health_points (subject, code, unit, time_ms, value);

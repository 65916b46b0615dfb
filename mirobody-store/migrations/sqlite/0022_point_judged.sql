-- The values whose source judged them (an interpretation, or a reference range of their own:
-- laboratory results, a small share of a person's values beside a watch's), read on their own
-- when `fetch_health_trends` counts low and high: the daily sums keep to the covering index of
-- migration 21, and these few are counted as their source said. The condition is the one the
-- statement (`sql/aggregate.rs`) repeats, as a partial index needs.
CREATE INDEX health_points_judged ON health_points (subject, code, unit, time_ms)
    WHERE interpretation IS NOT NULL OR ref_low IS NOT NULL OR ref_high IS NOT NULL;

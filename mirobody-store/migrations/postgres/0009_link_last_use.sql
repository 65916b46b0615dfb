-- When a link's last use was taken (mirobody_tools::upload_links). A used-up link whose last
-- use is recent may have an upload still in progress, which gives the use back if it stores
-- nothing: its row is kept until that upload must have ended, rather than dropped at once
-- when its person is at the bound of links.
ALTER TABLE upload_links ADD COLUMN last_use_ms BIGINT;

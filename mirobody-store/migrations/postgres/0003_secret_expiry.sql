-- mirobody schema 3 (PostgreSQL): a personal MCP secret may expire.
--
-- `expires_at_ms` is the time (milliseconds since the Unix epoch) from which the secret
-- identifies nobody; NULL, as every secret made before this schema has, means never. An
-- expired row is treated as absent: its lookup finds no owner and a new first secret replaces it.

ALTER TABLE personal_secrets ADD COLUMN expires_at_ms BIGINT;

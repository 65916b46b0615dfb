-- mirobody schema 2 (PostgreSQL): the owner token column of schema 1 is SQLite's concern only
-- (PostgreSQL searches the tsvector column, filtered by owner).

ALTER TABLE memories DROP COLUMN owner_tag;

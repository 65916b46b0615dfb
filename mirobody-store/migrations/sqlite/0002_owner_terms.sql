-- mirobody schema 2 (SQLite): memories are indexed by owner-scoped terms.
--
-- Each indexed word now carries a 20-digit token of its owner (`terms`, filled by the server
-- from `text` at the marker below), so every owner has their own posting lists: a search
-- reads, counts and ranks nothing of anyone else's, however large the table grows. Schema 1
-- indexed `text` with one owner token per row, which made every search rank against every
-- owner's postings.

DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TABLE memories_fts;
ALTER TABLE memories DROP COLUMN owner_tag;
ALTER TABLE memories ADD COLUMN terms TEXT NOT NULL DEFAULT '';

-- @fill-memory-terms

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, terms) VALUES (new.id, new.terms);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.id, old.terms);
    INSERT INTO memories_fts (rowid, terms) VALUES (new.id, new.terms);
END;

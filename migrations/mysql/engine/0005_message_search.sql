-- Upgrade: indexes the message browser's filters: ordering key, dedupe key, intake status and (a new search table) message type, each ending with the message ID so a page is a range read backwards
-- Heavy: builds four indexes on ductus_ix_messages (online, a minute or more per million messages)

-- A browser page is newest first, keyset-paged on the ID (a UUIDv7, so
-- ID order is time order and a time range is an ID range). Each filter's
-- index leads with (interface, the filtered column) and ends with the ID,
-- so a filtered page reads only its rows, whatever the table holds. The
-- unfiltered page reads (interface, id). MySQL has no CREATE INDEX IF
-- NOT EXISTS: the migrator skips an index that exists (error 1061), so the
-- file can run again.
CREATE INDEX ductus_ix_messages_list ON ductus_ix_messages (interface, id);
CREATE INDEX ductus_ix_messages_key ON ductus_ix_messages (interface, order_key, id);
CREATE INDEX ductus_ix_messages_dedupe ON ductus_ix_messages (interface, dedupe_key, id);
CREATE INDEX ductus_ix_messages_status ON ductus_ix_messages (interface, status, id);

-- Values extracted from a message at intake for searching (as an HL7
-- search table does): today the message type (field 'type', e.g.
-- ADT^A01). A row per message and field, written in the intake's
-- transaction; its key serves a filter, the message index reads a
-- message's own values back. Byte-compared, as the message table's keys.
CREATE TABLE IF NOT EXISTS ductus_ix_search (
    interface  VARBINARY(64)  NOT NULL,
    field      VARBINARY(32)  NOT NULL,
    value      VARBINARY(255) NOT NULL,
    message_id VARBINARY(40)  NOT NULL,
    PRIMARY KEY (interface, field, value, message_id),
    KEY ductus_ix_search_message (message_id, field)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

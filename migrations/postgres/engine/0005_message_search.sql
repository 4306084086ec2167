-- Upgrade: indexes the message browser's filters: ordering key, dedupe key, intake status and (a new search table) message type, each ending with the message ID so a page is a range read backwards
-- Heavy: builds four indexes on ductus_ix_messages (a minute or more per million messages; writes to the table wait meanwhile)

-- A browser page is newest first, keyset-paged on the ID (a UUIDv7, so
-- ID order is time order and a time range is an ID range). Each filter's
-- index leads with (interface, the filtered column) and ends with the ID,
-- so a filtered page reads only its rows, whatever the table holds. The
-- unfiltered page reads (interface, id).
CREATE INDEX IF NOT EXISTS ductus_ix_messages_list ON ductus_ix_messages (interface, id);
CREATE INDEX IF NOT EXISTS ductus_ix_messages_key ON ductus_ix_messages (interface, order_key, id);
CREATE INDEX IF NOT EXISTS ductus_ix_messages_dedupe ON ductus_ix_messages (interface, dedupe_key, id);
CREATE INDEX IF NOT EXISTS ductus_ix_messages_status ON ductus_ix_messages (interface, status, id);

-- Values extracted from a message at intake for searching (as an HL7
-- search table does): today the message type (field 'type', e.g.
-- ADT^A01). A row per message and field, written in the intake's
-- transaction; its key serves a filter, the message index reads a
-- message's own values back.
CREATE TABLE IF NOT EXISTS ductus_ix_search (
    interface  VARCHAR(64)  NOT NULL,
    field      VARCHAR(32)  NOT NULL,
    value      VARCHAR(255) NOT NULL,
    message_id VARCHAR(40)  NOT NULL,
    PRIMARY KEY (interface, field, value, message_id)
);
CREATE INDEX IF NOT EXISTS ductus_ix_search_message ON ductus_ix_search (message_id, field);

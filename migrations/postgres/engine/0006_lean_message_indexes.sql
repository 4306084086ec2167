-- Upgrade: drops the message table's (interface, received_at) index, which no query reads, and keeps only the messages that have an origin or a dedupe key in those two columns' indexes
-- Heavy: ductus_ix_messages is read once for each of the two rebuilt indexes (origin, dedupe key); each new index holds only the rows that have the column set

-- Every message of every intake wrote an entry in each of these indexes,
-- and each is more WAL in the intake's commit. (interface, received_at)
-- served nothing: the browser pages on (interface, id) and a UUIDv7 ID is
-- its arrival time. Most messages have
-- no origin (only a route's hops and schedule runs do) and most
-- interfaces no dedupe key, so those indexes keep only the rows a lookup
-- can find: a query that compares the column with a value implies it is
-- not NULL, so the partial index still serves it (origin stays unique
-- where it is set).
DROP INDEX IF EXISTS ductus_ix_messages_interface;
DROP INDEX IF EXISTS ductus_ix_messages_origin;
CREATE UNIQUE INDEX IF NOT EXISTS ductus_ix_messages_origin ON ductus_ix_messages (interface, origin) WHERE origin IS NOT NULL;
DROP INDEX IF EXISTS ductus_ix_messages_dedupe;
CREATE INDEX IF NOT EXISTS ductus_ix_messages_dedupe ON ductus_ix_messages (interface, dedupe_key, id) WHERE dedupe_key IS NOT NULL;

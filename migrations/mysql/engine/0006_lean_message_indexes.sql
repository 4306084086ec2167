-- Upgrade: drops the message table's (interface, received_at) index, which no query reads
-- Heavy: ductus_ix_messages (an in-place index drop: no rows are copied)

-- Every message of every intake wrote an entry in this index, and it
-- served nothing: the browser pages on (interface, id) and a UUIDv7 ID is
-- its arrival time. (MariaDB has no partial indexes, so the origin and
-- dedupe indexes stay whole here. MySQL cannot write DROP INDEX IF
-- EXISTS; the migrator skips the drop of an index that is gone.)
DROP INDEX ductus_ix_messages_interface ON ductus_ix_messages;

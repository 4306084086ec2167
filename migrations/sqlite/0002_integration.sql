-- Upgrade: creates the index on ductus_effects (message_id) that finds the effects a message's turn staged; the integration engine's ductus_ix_* tables, created here before, moved to the engine's own migration line (engine/0001_engine_tables.sql), which the engine applies
-- Heavy: ductus_effects (a new index on message_id)

-- A database migrated before the move recorded this version with the
-- engine's tables in it; the engine line's first file recognises them.
-- A runtime-only user gets no ductus_ix_* table.

-- Store.EffectListByMessages (a delivery's status is its lane message's
-- outcome and the send effect that message staged): find effects by message.
CREATE INDEX ductus_effects_message ON ductus_effects (message_id);

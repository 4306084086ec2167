-- Upgrade: adds a delivery's dismissal (when, by whom, why) to ductus_ix_deliveries
-- Heavy: none (nullable columns without a default: no table rewrite)

-- An operator dismissed a quarantined delivery: it is final and no longer
-- counted as quarantined. A resend clears all three.
ALTER TABLE ductus_ix_deliveries ADD COLUMN dismissed_at BIGINT;
ALTER TABLE ductus_ix_deliveries ADD COLUMN dismissed_by VARCHAR(128);
ALTER TABLE ductus_ix_deliveries ADD COLUMN dismiss_reason TEXT;

-- Upgrade: creates the operators' action tables: dismissed deliveries and paused destinations
-- Heavy: none (new tables only)

-- An operator dismissed a quarantined delivery: it is final and no longer
-- counted as quarantined. A row belongs to the lane message the delivery
-- was on; a resend moves the delivery to a new one, so the dismissal no
-- longer applies and stays only as history.
CREATE TABLE IF NOT EXISTS ductus_ix_dismissals (
    message_id      VARCHAR(40)  NOT NULL,
    destination     VARCHAR(64)  NOT NULL,
    lane_message_id BIGINT       NOT NULL,
    dismissed_at    BIGINT       NOT NULL,
    dismissed_by    VARCHAR(128) NOT NULL,
    reason          TEXT         NOT NULL,
    PRIMARY KEY (message_id, destination, lane_message_id)
);

-- Paused destinations: a row is a pause (who, when, why). It is the truth
-- an engine re-applies to the destination's lane actors when it starts,
-- so a pause survives a restart.
CREATE TABLE IF NOT EXISTS ductus_ix_pauses (
    interface   VARCHAR(64)  NOT NULL,
    destination VARCHAR(64)  NOT NULL,
    reason      TEXT         NOT NULL,
    paused_by   VARCHAR(128) NOT NULL,
    paused_at   BIGINT       NOT NULL,
    PRIMARY KEY (interface, destination)
);

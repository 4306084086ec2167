-- Upgrade: placeholder, replaced by the postgres adapter's real schema before anything is applied
-- Heavy: none
SELECT 1;

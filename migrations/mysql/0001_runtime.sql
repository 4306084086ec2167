-- Upgrade: placeholder, replaced by the mysql adapter's real schema before anything is applied
-- Heavy: none
SELECT 1;

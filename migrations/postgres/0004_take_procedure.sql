-- Upgrade: nothing on this backend (the version keeps every backend's files in step; MySQL gains its take procedure here)
-- Heavy: none

-- Deliberately empty.

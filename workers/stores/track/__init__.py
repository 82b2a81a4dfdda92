"""Track records' stores: Redis's hash, or the embedded state file's ``records`` object."""

"""Small helpers with no knowledge of ranking (atomic file writes)."""

"""User requests (load, release, update load config) run as serial per-collection jobs."""

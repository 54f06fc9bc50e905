"""Helpers the tests share (no tests here). Test modules import them as `support.<module>`:
pyproject.toml's pytest `pythonpath` puts tests/ on the path; a child process a test starts
inserts tests/ itself (`support.paths.TESTS`)."""

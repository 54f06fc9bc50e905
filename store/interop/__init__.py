"""Provenance from and to other systems: OpenLineage events (openlineage.py, ol_commit.py,
ol_export.py) and W3C PROV documents (prov.py). docs/openlineage.md and docs/prov.md describe
the mappings."""

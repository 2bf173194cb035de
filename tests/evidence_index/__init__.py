"""The evidence index (scripts/evidence_index/, scripts/build_evidence_index.py) against fake_github.py, a
GitHub-shaped server on loopback."""

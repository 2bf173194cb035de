"""The single-file diagnostic (scripts/kernodeck_diagnostic.py); fakes/ holds the stand-in torch."""

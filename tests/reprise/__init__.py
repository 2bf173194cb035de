"""Checkpoint-resume verification (scripts/reprise/) and scripts/check_training_run.py."""

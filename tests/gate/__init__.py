"""The gate (scripts/platform_runtime_check.py, scripts/platform_runtime/); faults/ is put on PYTHONPATH to break
it from outside."""

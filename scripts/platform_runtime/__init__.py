"""The platform runtime gate's library. Standard library only: torch is imported by device_worker alone,
in its own process, so that the file-system checks never pay for it."""

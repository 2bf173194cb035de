"""Names the gate's command line and its results share, in a module that imports nothing: the gate's entry
script reads them before it starts the device worker, and every import there delays torch's (the critical
path, docs/performance.md#gate)."""

from __future__ import annotations

# The gate's exit codes (platform_runtime_check.py's docstring says what each means).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
GPU_KINDS = ("cuda", "rocm", "mps")
DEVICE_TYPES = ("cpu", *GPU_KINDS)
# The gate's workspace is this prefix and 12 hex digits, made in the work dir (rules.whole_result checks it).
WORKSPACE_PREFIX = "platform-runtime-"

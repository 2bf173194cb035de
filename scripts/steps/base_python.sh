#!/usr/bin/env bash
# Run a Python script with the runner's base interpreter: the one setup-python gave ($1, may be
# empty), else `python` on Windows (python3 there can be the Microsoft Store stub), else python3.
# Usage: base_python.sh SETUP_PYTHON_PATH SCRIPT [ARGS...]
set -euo pipefail
base="${1:-}"
shift
if [ -z "$base" ]; then
  if [ "${RUNNER_OS:-}" = "Windows" ]; then
    base=python
  else
    base="$(command -v python3 || command -v python || true)"
  fi
fi
# setup-python reports C:\...\python.exe on Windows; Git Bash runs C:/.../python.exe reliably.
base="${base//\\//}"
if [ -z "$base" ]; then
  echo "::error title=platform-runtime::no python3 or python on PATH; set the python-version input"
  exit 2
fi
exec "$base" "$@"

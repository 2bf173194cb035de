"""The shared core every part imports (stdlib only): files, provenance, the contract."""

"""The NFS harness and its VM tooling."""

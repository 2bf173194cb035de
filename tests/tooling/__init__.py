"""Tests of the tooling: the lint-and-test runner."""

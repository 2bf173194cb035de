"""The test suite: a folder per part of the project, each with its own fixtures."""

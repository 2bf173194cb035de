"""Evidence index: bind every claim of a platform-runtime run to the SHA-256 of the bytes behind it.

Modules, one job each:
    common     hashing, atomic writes, secret scrubbing, the error types
    github     REST client: timeouts, retries/backoff, manual redirects, streamed hashed downloads
    logparse   runner job logs: image name/version, OS, ##[error] lines, non-zero exits (streamed)
    zipsafe    artifact zip extraction with caps; refuses escapes, absolute paths and links
    results    reading result JSON documents, their kind, ok and schema validity
    sources    SHA-256 of source files at a checkout
    statement  the in-toto Statement v1 envelope
    build      index of a GitHub Actions run
    local      index of local result files
    verdict    pass/fail with reasons
    summary    Markdown summary for $GITHUB_STEP_SUMMARY
    verify     recompute every subject's digest from the bytes
"""

PREDICATE_TYPE = "https://github.com/kernodeck/platform-runtime/evidence-index/v1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PLATFORMS = ("linux", "windows", "mps", "cuda", "nfs")

"""Evidence index: bind every claim of a platform-runtime run to the SHA-256 of the bytes behind it.

Modules, one job each:
    common          stream hashing, safe relative names, secret redaction, the error types
    github          REST client: timeouts, retries/backoff, manual redirects, streamed hashed downloads
    logparse        runner job logs: image name/version, OS, ##[error] lines, non-zero exits (streamed)
    zipsafe         artifact zip extraction with caps; refuses escapes, absolute paths and links
    results         reading result JSON documents: kind, schema validity and the registry's judge (rules.registry)ment
    crossfile       facts that span files (a reprise summary against its checkpoint, ...), from the bytes
    index_judge     the index's judge, shared by build and verify: every judgement derived from the bound bytes
    index_verdict   pass/fail with reasons (a platform is proven only by its own platform's result)
    runfacts        the run, its jobs and artifacts as the API answered (bound as logs/api/*.json)
    outputs         --platform-artifacts: which artifact holds each platform's evidence
    checkout_hashes SHA-256 of source files at a checkout
    statement       the in-toto Statement v1 envelope
    build           index of a GitHub Actions run
    local           index of local result files
    summary         Markdown summary for $GITHUB_STEP_SUMMARY
    verify          recompute every subject's digest and every judgement from the bytes
    baseline        an earlier run's evidence fetched for diff
    diffload        one input of diff or report, verified first
    diff            what changed between two runs; diffrender writes it as JSON and Markdown
    report          one self-contained HTML page of a verified index
    review_cli      the diff and report commands' argument parsing and wiring
"""

from common.workflow import PLATFORMS  # noqa: F401
from rules.kinds import EVIDENCE_PREDICATE_TYPE as PREDICATE_TYPE  # noqa: F401 - the package's names
from rules.kinds import STATEMENT_TYPE  # noqa: F401

# The predicate's own layout; verify refuses any other (version 2: judgements derived from the bytes).
PREDICATE_VERSION = 2

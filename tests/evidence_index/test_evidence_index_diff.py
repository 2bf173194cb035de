"""`build_evidence_index.py diff OLD NEW` (issue 22): every seeded change named with its path and kind, and
nothing else; noise left out; exit codes as git diff --exit-code. Inputs are real committed results and
indexes built by the CLI over copies of them (a local index) or from a GitHub-shaped server (a run index)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.fake_github import (
    FAKE_SOURCES,
    FakeGitHub,
    fake_source_root,
    gate_result,
    make_zip,
    measured_checks,
    source_hashes,
    standard_run,
)
from tests.evidence_index.forged_evidence import made_at
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
FILESYSTEMS = ROOT / "evidence" / "local" / "filesystems"
TMPFS = "platform-runtime-cpu-tmpfs.json"


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI in-process; `local` over a folder of committed results is indexed against the checkout that made
    them (forged_evidence.made_at), so what is judged is the folder, not the gate sources that moved on since."""
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"} if env is None else env
    args = tuple(map(str, args))
    if args[:1] == ("local",) and "--source-root" not in args and "--results" in args:
        args = (*args, "--source-root", str(made_at(Path(args[args.index("--results") + 1]))))
    return index_cli(*args, env=environ)


def records(path: Path) -> set[tuple]:
    document = json.loads(path.read_text())
    return {(c["platform"], c["kind"], c["path"], json.dumps(c["old"]), json.dumps(c["new"]))
            for c in document["changes"]}


def seeded_tmpfs(edit: Callable[[dict], None], folder: Path, name: str = "new.json") -> Path:
    document = json.loads((FILESYSTEMS / TMPFS).read_text())
    edit(document)
    path = folder / name
    path.write_text(json.dumps(document, indent=2))
    return path


def fail_jsonl(document: dict, missing: int = 7) -> None:
    """A consistent failure, as the gate would write it: the measurement, the check's ok, the verdict."""
    check = document["checks"]["jsonl_append"]
    check.update(missing=missing, valid_records=check["valid_records"] - missing, ok=False,
                 reason=f"{missing} records missing")
    document.update(ok=False, exit_code=1, failures=[f"jsonl_append: {missing} records missing"])


def test_two_results_name_each_seeded_change_with_its_path_and_kind_and_nothing_else(tmp_path):
    def edit(document: dict) -> None:
        document["device"]["torch_build"]["version"] = "2.14.0+cpu"
        document["source"]["files"]["scripts/platform_runtime/jsonl.py"] = "0" * 64
        fail_jsonl(document)

    new = seeded_tmpfs(edit, tmp_path)
    done = cli("diff", FILESYSTEMS / TMPFS, new, "--json", tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    old_source = json.loads((FILESYSTEMS / TMPFS).read_text())["source"]["files"]["scripts/platform_runtime/jsonl.py"]
    assert records(tmp_path / "d.json") == {
        ("linux", "environment", "device.torch_build.version", '"2.13.0+cpu"', '"2.14.0+cpu"'),
        ("linux", "source", "source.files.scripts/platform_runtime/jsonl.py", json.dumps(old_source),
         json.dumps("0" * 64)),
        ("linux", "check", "checks.jsonl_append.missing", "0", "7"),
        ("linux", "check", "checks.jsonl_append.valid_records", "1600", "1593"),
        ("linux", "check", "checks.jsonl_append.ok", "true", "false"),
        ("linux", "check", "checks.jsonl_append.reason", "null", '"7 records missing"'),
        ("linux", "verdict", "ok", "true", "false"),
        ("linux", "verdict", "exit_code", "0", "1"),
        ("linux", "verdict", "failures", "[]", '["jsonl_append: 7 records missing"]'),
    }


def test_the_summary_line_reads_the_likely_cause_first(tmp_path):
    def edit(document: dict) -> None:
        fail_jsonl(document)
        document["filesystem"]["type"] = "nfs4"

    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path))
    line = next(line for line in done.stdout.splitlines() if line.startswith("linux:"))
    assert line.index("environment: filesystem.type tmpfs -> nfs4") < line.index("check: checks.jsonl_append")
    assert line.index("check:") < line.index("verdict:")


def test_noise_is_not_a_difference(tmp_path):
    def edit(document: dict) -> None:
        # Another run's clock: started and finished a day earlier, together (core.time_views holds them to its
        # duration, and the index's build time bounds both).
        document["started_at"] = "2026-11-30T10:00:00+00:00"
        if "finished_at" in document:  # as far after the start as the run lasted (its recorded duration)
            end = dt.datetime(2026, 11, 30, 10, 0, 0, tzinfo=dt.timezone.utc) + dt.timedelta(
                seconds=round(document["duration_s"]))
            document["finished_at"] = end.isoformat()
        document["workspace_cleanup"]["workspace"] = "platform-runtime-ffffffffffff"
        document["filesystem"]["mount_id"] = 977
        document["checks"]["jsonl_append"]["duration_s"] += 0.4  # within 0.5 s
        document["checks"]["concurrent_replace"]["duration_s"] *= 1.3  # within 50 %
        document["github"] = {"run_id": "1", "run_attempt": "2", "job_id": "3", "image_os": None}

    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path), "--json", tmp_path / "d.json")
    assert done.returncode == 0, done.stdout
    assert json.loads((tmp_path / "d.json").read_text())["changes"] == []


def test_a_number_written_as_600_or_600_0_is_the_same_number(tmp_path):
    # jq (and other JSON tools) print 600.0 as 600: a result edited with one is not 4 changes more.
    def integral(value):
        if isinstance(value, dict):
            return {k: integral(v) for k, v in value.items()}
        if isinstance(value, list):
            return [integral(v) for v in value]
        return int(value) if isinstance(value, float) and value.is_integer() else value

    def edit(document: dict) -> None:
        document.update(integral(document))
        document["platform"]["python"] = "3.11.8"

    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path), "--json", tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert {r[1:3] for r in records(tmp_path / "d.json")} == {("environment", "platform.python")}

    def boolean(document: dict) -> None:  # true is not 1
        document["checks"]["jsonl_append"]["unterminated_tail"] = 0

    # ...and the judge (core.verdicts) reads the measurement itself: 0 where the rule needs false refutes the
    # result's ok, so the diff refuses it as not authentic rather than listing a change
    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(boolean, tmp_path), "--json", tmp_path / "b.json")
    assert done.returncode == 3 and "checks.jsonl_append.unterminated_tail is 0" in done.stderr, done.stderr


def test_a_duration_no_rule_declares_noise_is_a_check_difference_beyond_the_stated_tolerance(tmp_path):
    # A reprise verification's durations are declared by no rule module (core.noise): compared, within the
    # tolerance only.
    verification = next((ROOT / "evidence" / "local" / "run-local").glob("reprise-*/verification.json"))
    recorded = json.loads(verification.read_text())
    document = copy.deepcopy(recorded)
    document["timing"]["wall_s"] = round(recorded["timing"]["wall_s"] * 3, 3)
    (tmp_path / "new.json").write_text(json.dumps(document))
    assert cli("diff", verification, tmp_path / "new.json", "--json", tmp_path / "d.json").returncode == 1
    assert records(tmp_path / "d.json") == {
        ("local", "check", "timing.wall_s", json.dumps(recorded["timing"]["wall_s"]),
         json.dumps(document["timing"]["wall_s"]))}
    assert cli("diff", verification, tmp_path / "new.json", "--duration-seconds", "100").returncode == 0
    tolerance = json.loads((tmp_path / "d.json").read_text())["tolerance"]
    assert tolerance == {"duration_seconds": 0.5, "duration_ratio": 0.5}


def test_a_gate_check_twice_as_slow_is_timing_noise_counted_and_listed_not_a_difference(tmp_path):
    # core.record_rules declares a file-system check's duration_s timing noise: a loaded machine doubles it.
    def edit(document: dict) -> None:  # as long as the whole run (a check never outlasts it: core.record_rules)
        document["checks"]["concurrent_replace"]["duration_s"] = document["duration_s"]

    new = seeded_tmpfs(edit, tmp_path)
    done = cli("diff", FILESYSTEMS / TMPFS, new, "--json", tmp_path / "d.json", "--markdown", tmp_path / "d.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 difference(s); 1 measurement(s) varied within noise (timing 1)" in done.stdout
    document = json.loads((tmp_path / "d.json").read_text())
    recorded = json.loads((FILESYSTEMS / TMPFS).read_text())
    assert document["changes"] == [] and document["within_noise"] == 1
    assert document["noise"] == [{"platform": "linux", "kind": "check", "path": "checks.concurrent_replace.duration_s",
                                  "old": recorded["checks"]["concurrent_replace"]["duration_s"],
                                  "new": recorded["duration_s"], "result": "new.json", "noise": "timing"}]
    assert "1 measurement(s) varied within noise (timing 1)" in (tmp_path / "d.md").read_text()
    verbose = cli("diff", FILESYSTEMS / TMPFS, new, "--verbose")
    assert verbose.returncode == 0 and "  timing: linux checks.concurrent_replace.duration_s " in verbose.stdout


def test_the_runner_image_is_recorded_in_results_and_named_by_diff(tmp_path):
    from core.provenance import github_facts

    facts = github_facts({"GITHUB_ACTIONS": "true", "ImageOS": "ubuntu24", "ImageVersion": "20261117.1"})
    assert facts["image_os"] == "ubuntu24" and facts["image_version"] == "20261117.1"
    assert github_facts({"GITHUB_ACTIONS": "true"})["image_os"] is None

    def with_image(version: str) -> Callable[[dict], None]:
        def edit(document: dict) -> None:
            document["github"] = {"run_id": version, "image_os": "ubuntu24", "image_version": version}
        return edit

    old = seeded_tmpfs(with_image("20261110.1"), tmp_path, "old.json")
    new = seeded_tmpfs(with_image("20261117.1"), tmp_path, "new.json")
    assert cli("diff", old, new, "--json", tmp_path / "d.json").returncode == 1
    assert records(tmp_path / "d.json") == {
        ("linux", "environment", "github.image_version", '"20261110.1"', '"20261117.1"')}


def test_the_python_build_is_recorded_in_results_and_named_by_diff(tmp_path):
    import platform

    from core.provenance import platform_facts

    from tests.conftest import validate

    facts = platform_facts()
    assert facts["python_build"] == " ".join(platform.python_build())
    assert facts["python_compiler"] == platform.python_compiler()
    document = json.loads((FILESYSTEMS / TMPFS).read_text())
    document["platform"].update(python_build=facts["python_build"], python_compiler=facts["python_compiler"])
    validate(document, "platform-runtime-result.schema.json")
    (tmp_path / "old.json").write_text(json.dumps(document))

    def rebuilt(new: dict) -> None:  # the same 3.11.7, built again by another toolchain
        new["platform"].update(python_build="main Jan 14 2027 09:12:33", python_compiler="Clang 18.1.8")

    document_new = copy.deepcopy(document)
    rebuilt(document_new)
    (tmp_path / "new.json").write_text(json.dumps(document_new))
    assert cli("diff", tmp_path / "old.json", tmp_path / "new.json", "--json", tmp_path / "d.json").returncode == 1
    assert {r[1:3] for r in records(tmp_path / "d.json")} == {("environment", "platform.python_build"),
                                                            ("environment", "platform.python_compiler")}


def test_exit_codes_follow_git_diff(tmp_path):
    assert cli("diff", FILESYSTEMS / TMPFS, FILESYSTEMS / TMPFS).returncode == 0
    other = FILESYSTEMS / "platform-runtime-cpu-xfs-loop.json"
    assert cli("diff", FILESYSTEMS / TMPFS, other).returncode == 1
    missing = cli("diff", FILESYSTEMS / TMPFS, tmp_path / "nope.json")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    diagnostic = ROOT / "evidence" / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"
    kinds = cli("diff", FILESYSTEMS / TMPFS, diagnostic)
    assert kinds.returncode == 2 and "two kinds" in kinds.stderr
    mixed = cli("diff", FILESYSTEMS / "evidence-index.json", FILESYSTEMS / TMPFS, "--old-artifacts", FILESYSTEMS)
    assert mixed.returncode == 2 and "Traceback" not in mixed.stderr
    no_folder = cli("diff", FILESYSTEMS / "evidence-index.json", FILESYSTEMS / "evidence-index.json")
    assert no_folder.returncode == 2 and "artifacts" in no_folder.stderr


def test_a_result_whose_ok_its_measurements_refute_is_not_authentic(tmp_path):
    def edit(document: dict) -> None:
        fail_jsonl(document)
        document["ok"], document["exit_code"], document["failures"] = True, 0, []

    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "not authentic" in done.stderr


def copy_local(tmp_path: Path, name: str, edit: Callable[[dict], None] | None = None) -> Path:
    folder = tmp_path / name
    shutil.copytree(FILESYSTEMS, folder)
    (folder / "evidence-index.json").unlink()
    if edit is not None:
        path = folder / TMPFS
        document = json.loads(path.read_text())
        edit(document)
        path.write_text(json.dumps(document, indent=2))
    built = cli("local", "--results", folder, "--output", tmp_path / f"{name}.json")
    assert built.returncode in (0, 1), built.stderr
    return tmp_path / f"{name}.json"


def test_two_local_indexes_each_verified_then_diffed_result_by_result(tmp_path):
    old = copy_local(tmp_path, "old")
    new = copy_local(tmp_path, "new", fail_jsonl)
    done = cli("diff", old, new, "--old-artifacts", tmp_path / "old", "--new-artifacts", tmp_path / "new",
               "--json", tmp_path / "d.json", "--markdown", tmp_path / "d.md")
    assert done.returncode == 1, done.stdout + done.stderr
    found = records(tmp_path / "d.json")
    # the index's own verdict (platform null) gained the tmpfs result's reasons
    assert (None, "verdict", "verdict.reasons") in {f[:3] for f in found}
    assert (TMPFS, "check", "checks.jsonl_append.missing", "0", "7") in found
    assert (TMPFS, "verdict", "verdict.ok", "true", "false") in found
    assert {f[0] for f in found} == {None, TMPFS}  # the other four file systems did not change
    markdown = (tmp_path / "d.md").read_text()
    assert markdown.startswith("## What changed since the baseline:") and "`checks.jsonl_append.missing`" in markdown
    # a byte of a bound file changed after indexing: not authentic, nothing compared
    (tmp_path / "new" / "platform-runtime-cpu-xfs-loop.json").write_text("{}")
    assert cli("diff", old, new, "--old-artifacts", tmp_path / "old", "--new-artifacts",
               tmp_path / "new").returncode == 3


def run_index(tmp_path: Path, name: str, run_id: int, edit: Callable[[str, dict], None] | None = None,
              head_sha: str = "1928efbf98b33bc87fea7962539525f57a349d25") -> Path:
    """A run index of five platforms built by the CLI from a GitHub-shaped server on loopback."""
    from tests.evidence_index.fake_github import gate_result

    out = tmp_path / name
    sources = source_hashes(fake_source_root(), FAKE_SOURCES)
    with FakeGitHub(run_id=run_id, head_sha=head_sha) as fake:
        made = standard_run(fake, ("linux", "windows", "mps", "cuda", "nfs"), sources)
        for platform, (job, artifact) in made.items():
            document = gate_result(platform, sources=sources, run_id=run_id, job_id=job.id,
                                   repository=fake.repository, sha=fake.head_sha)
            if edit is not None:
                edit(platform, document)
            artifact.content = make_zip({f"platform-runtime-{platform}.json": json.dumps(document, indent=2).encode()})
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        done = cli("build", "--repository", fake.repository, "--run-id", run_id, "--output", out / "index.json",
                   "--logs-dir", out / "logs", "--download-dir", out / "artifacts", "--source-root", fake_source_root(),
                   "--log-patience", "0", env=env)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return out


def test_two_run_indexes_are_diffed_platform_by_platform_without_run_ids(tmp_path):
    def edit(platform: str, document: dict) -> None:
        if platform == "cuda":
            document["device"]["torch"] = {"version": "2.14.0+cu130", "cuda": "13.0", "hip": None}
            document["checks"]["jsonl_append"]["duration_s"] = document["duration_s"]  # the whole run's

    old = run_index(tmp_path, "old", 17320001234)
    new = run_index(tmp_path, "new", 17320005678, edit)
    done = cli("diff", old / "index.json", new / "index.json", "--old-artifacts", old / "artifacts", "--old-logs",
               old / "logs", "--new-artifacts", new / "artifacts", "--new-logs", new / "logs", "--json",
               tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    measured = measured_checks("cuda", True)["jsonl_append"]["duration_s"]  # the fake's real measurements
    assert records(tmp_path / "d.json") == {
        ("cuda", "environment", "device.torch.version", '"2.11.0+cu130"', '"2.14.0+cu130"')}
    # a check's duration is timing noise (core.record_rules declares it): counted apart, never a difference
    noise = json.loads((tmp_path / "d.json").read_text())["noise"]
    assert [(n["platform"], n["path"], n["old"], n["new"], n["noise"]) for n in noise] == [
        ("cuda", "checks.jsonl_append.duration_s", measured, gate_result("cuda")["duration_s"], "timing")]
    summary = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert summary["linux"] == "no differences" and summary["cuda"].startswith("environment: device.torch")
    assert summary["cuda"].endswith(" | 1 measurement(s) varied within noise (timing 1)")
    # the same run against itself: nothing, exit 0
    assert cli("diff", old / "index.json", old / "index.json", "--old-artifacts", old / "artifacts", "--old-logs",
               old / "logs", "--new-artifacts", old / "artifacts", "--new-logs", old / "logs").returncode == 0
    # an index that binds job logs needs its logs folder: usage, not a silent partial diff
    assert cli("diff", old / "index.json", new / "index.json", "--old-artifacts", old / "artifacts",
               "--new-artifacts", new / "artifacts").returncode == 2


def test_an_edited_run_index_is_not_authentic(tmp_path):
    old = run_index(tmp_path, "old", 17320001234)
    index = json.loads((old / "index.json").read_text())
    forged = copy.deepcopy(index)
    forged["predicate"]["verdict"]["pass"] = not index["predicate"]["verdict"]["pass"]
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    done = cli("diff", old / "index.json", tmp_path / "forged.json", "--old-artifacts", old / "artifacts",
               "--old-logs", old / "logs", "--new-artifacts", old / "artifacts", "--new-logs", old / "logs")
    assert done.returncode == 3 and "verdict" in done.stderr


def test_a_run_index_whose_repository_was_edited_is_not_authentic(tmp_path):
    # The repository a run index names is what a baseline is checked against: the gate results' own
    # github.repository must say the same, or an index copied from another repository could be renamed.
    old = run_index(tmp_path, "old", 17320001234)
    forged = json.loads((old / "index.json").read_text())
    forged["predicate"]["run"]["repository"] = "someone/else"
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    folders = ("--old-artifacts", old / "artifacts", "--old-logs", old / "logs", "--new-artifacts", old / "artifacts",
               "--new-logs", old / "logs")
    done = cli("diff", old / "index.json", tmp_path / "forged.json", *folders)
    assert done.returncode == 3 and "repository" in done.stderr, done.stdout + done.stderr
    assert cli("verify", tmp_path / "forged.json", "--artifacts", old / "artifacts", "--logs",
               old / "logs").returncode == 3


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_an_output_that_is_a_folder_is_a_usage_error(tmp_path, flag):
    done = cli("diff", FILESYSTEMS / TMPFS, FILESYSTEMS / TMPFS, flag, tmp_path)
    assert done.returncode == 2 and "folder" in done.stderr


def test_an_output_that_is_an_input_is_a_usage_error_and_the_input_is_kept(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    shutil.copy(FILESYSTEMS / TMPFS, old)
    shutil.copy(FILESYSTEMS / "platform-runtime-cpu-xfs-loop.json", new)
    kept = old.read_bytes(), new.read_bytes()
    for flag, target in (("--json", old), ("--markdown", new)):
        done = cli("diff", old, new, flag, target)
        assert done.returncode == 2 and "is an input" in done.stderr and "Traceback" not in done.stderr
    assert (old.read_bytes(), new.read_bytes()) == kept
    folder = tmp_path / "run"
    shutil.copytree(FILESYSTEMS, folder)
    index = folder / "evidence-index.json"
    before = index.read_bytes()
    done = cli("report", index, "--artifacts", folder, "--html", index)
    assert done.returncode == 2 and "is an input" in done.stderr and index.read_bytes() == before


def test_a_requirement_only_one_run_has_is_one_record_with_the_item_whole(tmp_path):
    def edit(document: dict) -> None:  # the same gate run without --require-filesystem
        document["requirements"] = [r for r in document["requirements"] if r["name"] != "filesystem=tmpfs"]
        document["arguments"]["require_filesystem"] = None

    done = cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path), "--json", tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert records(tmp_path / "d.json") == {
        ("linux", "environment", "arguments.require_filesystem", '"tmpfs"', "null"),
        ("linux", "verdict", "requirements.filesystem=tmpfs", json.dumps(
            {"name": "filesystem=tmpfs", "ok": True, "reason": "the work dir's file system is tmpfs"}), "null")}


def outside_code(line: str) -> str:
    """What of a Markdown line is not inside a code span (GitHub renders that part as Markdown)."""
    import re

    return re.sub(r"`[^`]*`", "", line)


def test_markup_from_a_result_stays_text_in_the_markdown(tmp_path):
    markup = '<img src="https://example.invalid/x.png">`|[link](https://example.invalid)'

    def edit(document: dict) -> None:
        fail_jsonl(document)
        document["checks"]["jsonl_append"]["reason"] = markup

    cli("diff", FILESYSTEMS / TMPFS, seeded_tmpfs(edit, tmp_path), "--markdown", tmp_path / "d.md")
    text = (tmp_path / "d.md").read_text()
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert bullets and all(outside_code(line) == "- " for line in bullets)  # a code span renders as text
    (row,) = [line for line in text.splitlines() if "`checks.jsonl_append.reason`" in line]
    assert row.count("|") - row.count("\\|") == 6  # the value's | stays inside its cell
    assert "`" + "<img" in row and "'|" not in row.split("`<img", 1)[1].split("` |", 1)[0].replace("\\|", "")


def test_a_new_head_commit_is_a_source_difference_of_the_run_and_of_each_platform(tmp_path):
    old = run_index(tmp_path, "old", 17320001234)
    new = run_index(tmp_path, "new", 17320005678, head_sha="2" * 40)
    done = cli("diff", old / "index.json", new / "index.json", "--old-artifacts", old / "artifacts", "--old-logs",
               old / "logs", "--new-artifacts", new / "artifacts", "--new-logs", new / "logs", "--json",
               tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    found = records(tmp_path / "d.json")
    was = json.dumps("1928efbf98b33bc87fea7962539525f57a349d25")
    assert (None, "source", "run.head_sha", was, json.dumps("2" * 40)) in found
    # The fake gate results name no commit of their own (source.git.head null: made outside a checkout, as the
    # judge requires of a head this repository's history does not hold); the job's github.sha is the new one.
    assert {f[:3] for f in found} == {(None, "source", "run.head_sha")} | {
        (p, "source", "github.sha") for p in ("linux", "windows", "mps", "cuda", "nfs")}


GPU_DIAGNOSTIC = ROOT / "evidence" / "cuda" / "run" / "kernodeck-diagnostic-gpu.json"


def test_a_diagnostic_that_says_passed_while_its_own_check_failed_is_not_authentic(tmp_path):
    # A diagnostic records its claim as status/exit_code, not `ok`: its claim is refuted all the same.
    document = json.loads(GPU_DIAGNOSTIC.read_text())
    document["execution"]["checks"]["product"] = False
    (tmp_path / "forged.json").write_text(json.dumps(document))
    done = cli("diff", GPU_DIAGNOSTIC, tmp_path / "forged.json", "--json", tmp_path / "d.json")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "not authentic" in done.stderr and "execution.checks.product" in done.stderr
    assert not (tmp_path / "d.json").exists()
    # the same failure, told as a failure, is a difference
    document.update(status="failed", code="CHECK_FAILED", exit_code=1)
    (tmp_path / "failed.json").write_text(json.dumps(document))
    assert cli("diff", GPU_DIAGNOSTIC, tmp_path / "failed.json").returncode == 1


def diff_records(tmp_path: Path, old: Path, edit: Callable[[dict], None]) -> set[tuple]:
    document = json.loads(old.read_text())
    edit(document)
    (tmp_path / "new.json").write_text(json.dumps(document))
    done = cli("diff", old, tmp_path / "new.json", "--json", tmp_path / "d.json")
    assert done.returncode == 1, done.stdout + done.stderr
    return {change[1:3] for change in records(tmp_path / "d.json")}


def test_the_device_a_diagnostic_ran_on_and_its_driver_are_environment(tmp_path):
    def edit(document: dict) -> None:  # the same passing diagnostic on another GPU and driver
        document["execution"].update(gpu_model="NVIDIA H100 80GB HBM3", capability="sm_90",
                                     total_memory_bytes=85_000_000_000)
        document["host_check"]["gpus"][0]["driver_version"] = "575.57.08"

    assert diff_records(tmp_path, GPU_DIAGNOSTIC, edit) == {
        ("environment", "execution.gpu_model"), ("environment", "execution.total_memory_bytes"),
        ("environment", "host_check.gpus.0.driver_version")}
    assert diff_records(tmp_path, GPU_DIAGNOSTIC, lambda d: d["execution"].update(capability="sm_100")) == {
        ("environment", "execution.capability")}


def test_the_nfs_mount_the_harness_made_is_environment(tmp_path):
    harness = ROOT / "evidence" / "nfs" / "nfs-harness.json"

    def edit(document: dict) -> None:
        document["setup"]["mount"]["source"] = "10.0.0.2:/export"
        document["setup"]["nfsd_versions"] = "-3 +4 +4.1 -4.2"

    assert diff_records(tmp_path, harness, edit) == {("environment", "setup.mount.source"),
                                                     ("environment", "setup.nfsd_versions")}


def test_a_reprise_process_exit_code_is_a_check_not_the_protocol(tmp_path):
    verification = next((ROOT / "evidence" / "local" / "run-local").glob("reprise-*/verification.json"))

    def edit(document: dict) -> None:
        next(p for p in document["protocol"]["processes"] if p["name"] == "reprise")["exit_code"] = 1

    assert diff_records(tmp_path, verification, edit) == {("check", "protocol.processes.reprise.exit_code")}


def test_markdown_from_result_names_and_text_cannot_render_in_the_step_summary(tmp_path):
    # A step summary renders Markdown: a link or an image (fetched through GitHub's proxy) from a result's
    # reason or from a result's file name (a local index's platform) must stay characters.
    markup = "![t](https://example.invalid/t.png) [click](https://example.invalid) https://example.invalid"

    def edit(document: dict) -> None:
        fail_jsonl(document)
        document["checks"]["jsonl_append"]["reason"] = markup

    new = seeded_tmpfs(edit, tmp_path)
    assert cli("diff", FILESYSTEMS / TMPFS, new, "--markdown", tmp_path / "lone.md").returncode == 1
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(new, folder / "platform-runtime-[x](https:example.invalid).json")
    assert cli("local", "--results", folder, "--output", tmp_path / "index.json").returncode == 1
    done = cli("diff", FILESYSTEMS / "evidence-index.json", tmp_path / "index.json", "--old-artifacts",
               FILESYSTEMS, "--new-artifacts", folder, "--markdown", tmp_path / "index.md")
    assert done.returncode == 1, done.stdout + done.stderr
    for name in ("lone.md", "index.md"):
        lines = (tmp_path / name).read_text().splitlines()
        assert any("example.invalid" in line for line in lines)
        for line in lines:
            rest = outside_code(line)
            assert "example.invalid" not in rest and "](" not in rest and "<" not in rest, (name, line)

"""The Windows path, run: python.org's CPython 3.12 for Windows with the pinned win_amd64 runtime under Wine (built
by `python3 dev.py wine`'s own code, tools/wine/, once per module), running the gate, the diagnostic, the reprise
verification and the training-run check as a Windows user types them; and the Windows semantics the project's own
code must get right, measured there. Wine is not Windows: the gate records Wine and no rule counts it as Windows.

Skips, saying why, where Wine is not installed (`.ci/run` installs it from Debian's packages). Each Windows Python
process costs seconds under Wine (`import torch` alone 8-40 s), so each job runs once, in a module-scoped fixture.
"""

from __future__ import annotations

import copy
import json
import platform
import shutil
import subprocess
import sys

import pytest
from rules import registry, requirements
from rules.gate_record import read_gate

from tests.conftest import ROOT, SCRIPTS, validate
from tests.evidence_index.forged_evidence import index_and_verify

sys.path.insert(0, str(ROOT / "tools"))
from wine import build, jobs, session  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.beside,  # long and self-contained: tools/run_tests.py runs it beside the rest of the suite
    pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64",
                       reason="Wine runs the win_amd64 build on x86-64 Linux only"),
    pytest.mark.skipif(shutil.which("wine") is None or shutil.which("wineserver") is None,
                       reason=f"Wine is not installed ({build.APT_INSTALL}; .ci/run does it as root)"),
]


@pytest.fixture(scope="module")
def windows(tmp_path_factory):
    """The built Windows Python (from the user cache when a run before made it) and its Wine session."""
    built = build.build(echo=False)
    out = tmp_path_factory.mktemp("wine-jobs")
    with session.Session(built.prefix, built.home) as wine:
        yield built, wine, out


def run_job(windows, job: jobs.Job) -> tuple[session.Completed, dict | None]:
    built, wine, _ = windows
    done = wine.run([str(built.python), *job.arguments], job.cwd, job.timeout_s)
    try:
        document = json.loads(job.output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        document = None
    return done, document


@pytest.fixture(scope="module")
def gate(windows):
    return run_job(windows, jobs.gate(windows[2]))


@pytest.fixture(scope="module")
def reprise(windows):
    return run_job(windows, jobs.reprise(windows[2]))


@pytest.fixture(scope="module")
def semantics(windows):
    built, wine, out = windows
    done = wine.run([str(built.python), "tests\\wine\\windows_semantics.py", session.windows_path(out / "semantics")],
                    ROOT, 300)
    assert done.returncode == 0, done.output[-3000:]
    return json.loads(done.output.strip().splitlines()[-1])


def test_the_gate_passes_on_windows_python_under_wine_and_records_wine(gate):
    done, result = gate
    assert done.returncode == 0 and result is not None, done.output[-3000:]
    assert result["ok"] is True and result["failures"] == [], result["failures"]
    assert result["platform"]["system"] == "Windows" and result["platform"]["python_compiler"].startswith("MSC v.")
    assert result["platform"]["wine"]["ntdll_version"] and result["platform"]["wine"]["registry_key"] is True
    assert result["filesystem"]["method"] == "win32-GetVolumeInformationW"
    assert result["checks"]["jsonl_append"]["method"] == "msvcrt-locking-lockfile"
    assert result["device"]["torch_build"]["wheel_tags"] == ["cp312-cp312-win_amd64"]
    assert result["isolation"]["present"] == [], result["isolation"]["findings"]  # python.org's own layout, accepted
    assert "under Wine " in done.output and "(not Windows)" in done.output  # the summary line says so
    validate(result, "platform-runtime-result.schema.json")
    assert registry.judge(result).ok, registry.judge(result).reasons


def test_a_wine_result_never_proves_windows_and_names_wine(gate):
    """`--require windows` there is rules.requirements' rule, the gate's and the judge's; the index refuses too."""
    _, result = gate
    refused = requirements.problems_of(read_gate(result), "windows")
    assert refused and refused[0].startswith(f"this ran under Wine {result['platform']['wine']['ntdll_version']}")
    assert any("Wine" in why for why in registry.prove_platform("windows", result))
    # its NTFS is Wine's answer for the Z: drive (ext4 underneath here), so no file-system claim holds on it either
    assert any("Z: drive" in why for why in requirements.problems_of(read_gate(result), "filesystem=ntfs"))


@pytest.mark.parametrize("edit, named", [
    (lambda d: d["platform"].pop("wine"), "platform.wine is missing"),
    (lambda d: d["platform"]["wine"].update(ntdll_version=None), "Wine (its registry key"),
    (lambda d: d["platform"]["wine"].update(registry_key=False), "this ran under Wine"),
    (lambda d: d["platform"].update(wine=None), "platform.wine"),
], ids=["wine-dropped", "ntdll-answer-erased", "registry-answer-erased", "wine-nulled"])
def test_a_wine_result_edited_to_claim_windows_is_refused(tmp_path, gate, edit, named):
    """The forger adds the windows requirement as held and hides Wine: the judge re-derives the requirement from
    the recorded answers (either names Wine) and holds a current result to recording them."""
    done, result = gate
    assert done.returncode == 0, "the forgeries start from a passing Wine result"
    forged = copy.deepcopy(result)
    forged["arguments"]["require"].append("windows")
    forged["requirements"].append({"name": "windows", "ok": True, "reason": "Windows, volume file system ntfs"})
    edit(forged)
    verified, report = index_and_verify(tmp_path, forged)
    assert verified.returncode != 0, verified.stdout
    assert any(named in problem for problem in report["problems"]), report["problems"]


def test_diff_names_wine_beside_a_native_result(tmp_path, gate):
    _, result = gate
    native = ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json"
    (tmp_path / "wine.json").write_text(json.dumps(result), encoding="utf-8")
    diffed = subprocess.run([sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py"), "diff", str(native),
                             str(tmp_path / "wine.json"), "--json", str(tmp_path / "diff.json")],
                            capture_output=True, text=True, timeout=120)
    assert diffed.returncode == 1, diffed.stderr
    changes = {change["path"]: change for change in json.loads((tmp_path / "diff.json").read_text())["changes"]}
    assert changes["platform.system"]["old"] == "Linux" and changes["platform.system"]["new"] == "Windows"
    assert changes["platform.wine.ntdll_version"]["new"] == result["platform"]["wine"]["ntdll_version"], sorted(changes)
    assert changes["platform.wine.ntdll_version"]["kind"] == "environment"


def test_the_diagnostic_passes_on_windows_python_under_wine(windows):
    done, report = run_job(windows, jobs.diagnostic(windows[2]))
    assert done.returncode == 0 and report is not None, done.output[-3000:]
    assert report["status"] == "passed" and report["code"] == "CPU_CHECK_PASSED", report
    assert report["runtime"]["system"] == "windows" and report["execution"]["device"] == "cpu"


def test_the_reprise_verification_passes_on_windows_python_under_wine(reprise):
    done, verification = reprise
    assert done.returncode == 0 and verification is not None, done.output[-3000:]
    assert verification["all_checks_passed"] is True and verification["environment"]["numpy"] == "1.26.4"


def test_the_training_run_check_passes_on_the_folder_the_reprise_left(windows, reprise):
    assert reprise[0].returncode == 0, reprise[0].output[-2000:]
    done, check = run_job(windows, jobs.training_run(windows[2]))
    assert done.returncode == 0 and check is not None, done.output[-3000:]
    assert check["ok"] is True, check


def test_wine_is_detected_both_ways(semantics):
    assert semantics["wine"]["ntdll_version"] and semantics["wine"]["registry_key"] is True


def test_a_read_refused_by_a_sharing_violation_is_retried_until_the_holder_lets_go(semantics):
    """CPython's open() turns the sharing violation into EACCES with no Windows error; the reader's own open
    keeps it, so it waits instead of dying (as every replace reader did under Wine before)."""
    reader = semantics["reader"]
    assert reader["plain_open_error"] == {"type": "PermissionError", "errno": 13, "winerror": None}
    assert reader["error"] is None and reader["read"] == '{"v": 1}' and reader["sharing_retries"] > 0


def test_a_replace_waits_out_a_reader_holding_the_file_longer_than_the_former_budget(semantics):
    writer = semantics["writer"]
    assert writer["error"] is None and writer["content"] == "new" and writer["temporaries"] == 0
    assert writer["sharing_retries"] > 0 and writer["seconds"] >= 4.0


def test_msvcrt_locking_refuses_while_held_and_a_wrong_call_is_an_error_not_a_refusal(semantics):
    locks = semantics["locks"]
    assert locks["refused_while_held"] is True and locks["granted_after"] is True
    assert locks["refused_errno"] in (0, 13)  # Wine 8 sets none (0); Windows' C runtime documents EACCES (13)
    assert locks["bad_descriptor"]["errno"] == 9  # EBADF: raised, never read as "another holds the lock"


def test_the_installations_own_layout_is_not_an_injection_vector(semantics):
    layout = semantics["layout"]
    assert any(path.endswith("\\DLLs") for path in layout["stdlib_dirs"])
    assert layout["unowned"] == [] and layout["stdlib_shadows"] == [] and layout["present"] == []


@pytest.mark.full
def test_require_windows_under_wine_fails_naming_wine(windows):
    """End to end, as a user would ask: the gate itself refuses --require windows under Wine."""
    job = jobs.gate(windows[2] / "require-windows")
    job.output.parent.mkdir(parents=True, exist_ok=True)
    job = jobs.Job(job.name, [*job.arguments, "--require", "windows"], job.cwd, job.timeout_s, job.output)
    done, result = run_job(windows, job)
    assert done.returncode == 1 and result is not None, done.output[-3000:]
    windows_verdict = next(r for r in result["requirements"] if r["name"] == "windows")
    assert windows_verdict["ok"] is False and windows_verdict["reason"].startswith("this ran under Wine")
    assert all(check["ok"] for check in result["checks"].values())

"""The front door stays true: every link in README.md and docs/ resolves, and every code example in them is
checked as written (shell: syntax, the scripts it names exist and accept each option it passes; YAML and JSON:
they parse, and a workflow example passes actionlint)."""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
BIN = Path(sys.executable).parent


def _ids(paths: list[Path]) -> list[str]:
    return [path.relative_to(ROOT).as_posix() for path in paths]


def blocks(language: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for lang, body in FENCE.findall(page.read_text(encoding="utf-8")):
            if lang == language:
                found.append((page.relative_to(ROOT).as_posix(), body))
    return found


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    names = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        names.add(slug)
    return names


def test_there_is_a_page_per_part():
    names = {path.name for path in PAGES}
    assert {"gate.md", "diagnostic.md", "checkpoint-resume.md", "workflow.md", "evidence-index.md", "nfs-vm.md",
            "performance.md", "development.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_relative_link_and_anchor_resolves(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target):
            continue  # an absolute URL: not followed offline
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, broken


@functools.cache
def help_text(script: str, subcommand: str | None) -> str:
    command = [sys.executable, "-B", script, *([subcommand] if subcommand else []), "--help"]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, f"{' '.join(command[2:])} failed: {completed.stderr[-500:]}"
    return completed.stdout


def commands(body: str) -> list[tuple[Path, list[str]]]:
    """(folder it runs in, its words) of every command of a shell block, following the block's own `cd`."""
    found, cwd = [], ROOT
    for raw in body.replace("\\\n", " ").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|;", line):
            words = shlex.split(part.replace("[", " ").replace("]", " ").replace("|", " "), posix=True)
            if words[:1] == ["cd"] and len(words) == 2:
                cwd = (cwd / words[1]).resolve()
            found.append((cwd, words))
    return found


def python_calls(body: str) -> list[tuple[str, list[str]]]:
    """(script path relative to the repository, its arguments) of every `python ... X.py ...` command."""
    calls = []
    for cwd, words in commands(body):
        for index, word in enumerate(words):
            if re.fullmatch(r"(\.venv/bin/)?python3?", word):
                rest = [w for w in words[index + 1:] if w not in ("-B", "-u")]
                if rest and rest[0].endswith(".py"):
                    calls.append((str((cwd / rest[0]).resolve().relative_to(ROOT)), rest[1:]))
                break
    return calls


def named_files(body: str) -> list[str]:
    """Every repository-relative script or test file a command names (`sudo x/run.sh`, `-m pytest tests/..`)."""
    return [str((cwd / word).resolve().relative_to(ROOT)) for cwd, words in commands(body) for word in words
            if re.fullmatch(r"[\w.][\w./-]*\.(py|sh)", word) and not word.startswith("/")]


def dev_jobs() -> tuple[str, ...]:
    """The jobs dev.py runs (its own table)."""
    sys.path.insert(0, str(ROOT))
    import dev

    return tuple(dev.SCRIPTS)


def dev_options(job: str) -> str:
    """What `dev.py JOB` accepts: the script it runs (dev.py's own table); `test` takes run_tests.py's flags."""
    sys.path.insert(0, str(ROOT))
    import dev

    script = dev.SCRIPTS[job]
    return (ROOT / script).read_text(encoding="utf-8") if job == "test" else help_text(script, None)


SH_BLOCKS = blocks("sh") + blocks("bash")


def inline_commands() -> list[tuple[str, str]]:
    """Commands quoted in the prose (`python3 dev.py nfs --init systemd`), outside the fenced blocks."""
    found = []
    for page in PAGES:
        for span in re.findall(r"`([^`\n]+)`", FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"(sudo |flock \S+ )?(\.venv/bin/)?python3? (-B )?\S+\.py\b", span):
                found.append((page.relative_to(ROOT).as_posix(), span))
    return found


@pytest.mark.parametrize(("page", "body"), SH_BLOCKS, ids=[f"{p}#{i}" for i, (p, _) in enumerate(SH_BLOCKS)])
def test_a_shell_example_parses_and_every_option_it_passes_exists(page, body):
    check_shell(page, body)


INLINE = inline_commands()


@pytest.mark.parametrize(("page", "command"), INLINE, ids=[f"{p}:{c}" for p, c in INLINE])
def test_a_command_quoted_in_the_prose_names_a_script_and_options_that_exist(page, command):
    check_shell(page, command)


def check_shell(page: str, body: str) -> None:
    assert subprocess.run(["bash", "-n"], input=body, text=True).returncode == 0, body
    missing = [name for name in named_files(body) if not (ROOT / name).is_file()]
    assert not missing, f"{page}: no such file {missing}"
    for script, args in python_calls(body):
        assert (ROOT / script).is_file(), f"{page}: {script} does not exist"
        if script == "dev.py":
            assert not args or args[0] in dev_jobs(), args
            if args:
                text = dev_options(args[0])
                unknown = [a.split("=")[0] for a in args[1:] if a.startswith("--") and f"{a.split('=')[0]}" not in text]
                assert not unknown, f"{page}: dev.py {args[0]} does not accept {unknown}"
            continue
        if script.startswith("scripts/reprise/") and not script.endswith(("train.py", "verify_resume.py")):
            continue
        subcommand = args[0] if args and not args[0].startswith("-") and script.endswith(
            "build_evidence_index.py") else None
        text = help_text(script, subcommand)
        unknown = [arg.split("=")[0] for arg in args if arg.startswith("--") and arg.split("=")[0] not in text]
        assert not unknown, f"{page}: {script} {subcommand or ''} does not accept {unknown}"


@pytest.mark.parametrize(("page", "body"), blocks("json"), ids=[p for p, _ in blocks("json")])
def test_a_json_example_parses(page, body):
    json.loads(body)


@pytest.mark.parametrize(("page", "body"), blocks("yaml"), ids=[f"{p}#{i}" for i, (p, _) in enumerate(blocks("yaml"))])
def test_a_yaml_example_parses_and_a_workflow_example_passes_actionlint(page, body, tmp_path):
    document = yaml.safe_load(body)
    if not (isinstance(document, dict) and "jobs" in document):
        return
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "example.yml").write_text(body, encoding="utf-8")
    (tmp_path / ".github" / "actionlint.yaml").write_text(
        (ROOT / ".github" / "actionlint.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    completed = subprocess.run([str(BIN / "actionlint"), "-shellcheck", str(BIN / "shellcheck"),
                                ".github/workflows/example.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert completed.returncode == 0, f"{page}:\n{completed.stdout}{completed.stderr}"


def test_the_action_is_ready_for_the_marketplace():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["name"] and len(action["description"]) < 125
    assert set(action["branding"]) == {"icon", "color"}


def _declared_inputs(uses: str) -> set[str] | None:
    """The inputs our action or reusable workflow named by `uses:` declares (None: not ours)."""
    target = uses.split("@", 1)[0]
    if not target.startswith("kernodeck/platform-runtime"):
        return None
    relative = target.removeprefix("kernodeck/platform-runtime").strip("/")
    if relative.endswith((".yml", ".yaml")):
        workflow = yaml.safe_load((ROOT / relative).read_text(encoding="utf-8"))
        triggers = workflow.get("on", workflow.get(True))
        return set((triggers["workflow_call"] or {}).get("inputs") or {})
    action = yaml.safe_load((ROOT / relative / "action.yml").read_text(encoding="utf-8"))
    return set(action.get("inputs") or {})


@pytest.mark.parametrize(("page", "body"), blocks("yaml"), ids=[f"{p}#{i}" for i, (p, _) in enumerate(blocks("yaml"))])
def test_an_example_passes_only_inputs_our_action_or_workflow_declares(page, body):
    document = yaml.safe_load(body)
    jobs = document.get("jobs", {}) if isinstance(document, dict) else {}
    for name, job in jobs.items():
        for step in [job, *(job.get("steps") or [])]:
            declared = _declared_inputs(str(step.get("uses", "")))
            if declared is not None:
                unknown = set(step.get("with") or {}) - declared
                assert not unknown, f"{page}: job {name} passes {sorted(unknown)} to {step['uses']}"


TESTED = re.compile(r"<!-- tested as written: (?:the (\w+) job of )?(tests/act/[\w.-]+\.yml)[^>]*-->\n"
                    r"```yaml\n(.*?)^```", re.M | re.S)


def test_the_readme_examples_are_the_workflows_the_act_tests_run():
    """README's reusable-workflow and action examples are, as YAML, the fixtures tests/steps/test_workflows_act.py
    runs under act (the cpu job of root-action.yml), so what a user copies has run."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = TESTED.findall(text)
    assert len(found) >= 2, "README marks no example as tested"
    for job, fixture, body in found:
        shown, ran = yaml.safe_load(body), yaml.safe_load((ROOT / fixture).read_text(encoding="utf-8"))
        if job:
            assert shown["jobs"] == {job: ran["jobs"][job]}, f"README's {job} job differs from {fixture}'s"
            assert {k: v for k, v in shown.items() if k != "jobs"} == {k: v for k, v in ran.items() if k != "jobs"}
        else:
            assert shown == ran, f"README's example differs from {fixture}"
        act_tests = (ROOT / "tests" / "steps" / "test_workflows_act.py").read_text(encoding="utf-8")
        assert Path(fixture).name in act_tests, f"{fixture} is not run by the act tests"

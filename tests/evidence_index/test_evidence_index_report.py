"""`build_evidence_index.py report INDEX --artifacts DIR --html FILE` (issue 22): one self-contained page, the
verdict first, each check with its numbers, the environment, the requirements, every bound file and, given a
baseline, the diff; markup from a result renders as text; and, in headless chromium, the page shows the
verdict and each check, its screenshot is not blank, and no request leaves it."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.evidence_index.browser import CHROMIUM, Recorder, chromium, page_requests, png_pixels
from tests.evidence_index.test_evidence_index_diff import FILESYSTEMS, TMPFS, cli, fail_jsonl

RUN_LOCAL = ROOT / "evidence" / "local" / "run-local"
FAILING = ROOT / "evidence" / "cuda" / "no-visible-gpu"  # a real run with the GPU hidden: authentic, FAIL
GATE_CHECKS = ("device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "workspace_cleanup")
MARKUP = '<script>document.title="pwned"</script><img src="/injected.png"><b>bold</b>'
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


class Page(HTMLParser):
    """The elements and the text of a page, as a parser reads them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def joined(self) -> str:
        return " ".join(" ".join(self.text).split())


def report(tmp_path: Path, index: Path, artifacts: Path, *extra: object, name: str = "report.html") -> Path:
    out = tmp_path / name
    done = cli("report", index, "--artifacts", artifacts, "--html", out, *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_page_reads_verdict_first_then_checks_requirements_environment_and_bound_files(tmp_path):
    page = Page(report(tmp_path, RUN_LOCAL / "evidence-index.json", RUN_LOCAL).read_text())
    first_heading = next(a for t, a in page.tags if t == "h1")
    assert first_heading.get("id") == "verdict"
    text = page.joined
    assert text.index("Verdict: PASS") < text.index("platform-runtime-cpu.json")
    for check in GATE_CHECKS:
        assert check in text
    assert "distinct_versions_seen" in text and "Requirements" in text and "device=cpu" in text
    assert "torch_build" in text or "record_sha256" in text
    index = json.loads((RUN_LOCAL / "evidence-index.json").read_text())
    for subject in index["subject"]:
        assert subject["name"] in text and subject["digest"]["sha256"] in text
    assert text.count("re-verified") >= len(index["subject"])


def test_a_failing_run_says_fail_and_why(tmp_path):
    text = Page(report(tmp_path, FAILING / "evidence-index.json", FAILING).read_text()).joined
    assert text.index("Verdict: FAIL") < text.index("Platforms")
    assert "torch.cuda.is_available() is False" in text and "requirement 'cuda' did not hold" in text


def test_the_page_loads_nothing_and_declares_so(tmp_path):
    html = report(tmp_path, RUN_LOCAL / "evidence-index.json", RUN_LOCAL).read_text()
    page = Page(html)
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe", "object", "embed", "base")]
    assert all(a.get("href", "#").startswith("#") for _, a in page.tags)
    assert not [a for _, a in page.tags if "src" in a]
    policy = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") ==
                  "Content-Security-Policy")
    assert policy.startswith("default-src 'none';")
    assert "url(" not in html and "@import" not in html


def markup_folder(tmp_path: Path) -> tuple[Path, Path]:
    """The committed file-system results, one of them failing with markup in its reason and failures."""
    folder = tmp_path / "markup"
    shutil.copytree(FILESYSTEMS, folder)
    (folder / "evidence-index.json").unlink()
    path = folder / TMPFS
    document = json.loads(path.read_text())
    fail_jsonl(document)
    document["checks"]["jsonl_append"]["reason"] = MARKUP
    document["failures"] = [f"jsonl_append: {MARKUP}"]
    path.write_text(json.dumps(document, indent=2))
    done = cli("local", "--results", folder, "--output", tmp_path / "markup-index.json")
    assert done.returncode == 1, done.stdout + done.stderr
    return tmp_path / "markup-index.json", folder


def test_markup_in_a_result_renders_as_text(tmp_path):
    index, folder = markup_folder(tmp_path)
    html = report(tmp_path, index, folder).read_text()
    page = Page(html)
    assert not [t for t, _ in page.tags if t in ("script", "img", "b")]
    assert MARKUP in page.joined  # the very characters, as text
    assert "&lt;script&gt;" in html


def test_a_failing_result_of_the_wrong_shape_is_shown_not_a_crash(tmp_path):
    # The index is authentic and FAIL (the result does not validate against its schema): a reviewer needs its
    # page most of all. Lists where objects belong, an object where a list belongs.
    folder = tmp_path / "shapes"
    folder.mkdir()
    document = json.loads((FILESYSTEMS / TMPFS).read_text())
    document.update(checks=[{"name": "jsonl_append", "ok": False}], requirements={"cuda": {"ok": False}},
                    device=["cpu"], platform="Linux", ok=False, exit_code=1, failures=["jsonl_append"])
    (folder / TMPFS).write_text(json.dumps(document))
    assert cli("local", "--results", folder, "--output", tmp_path / "index.json").returncode == 1
    text = Page(report(tmp_path, tmp_path / "index.json", folder).read_text()).joined
    assert text.index("Verdict: FAIL") < text.index(TMPFS) and "does not validate against its schema" in text
    assert "jsonl_append" in text  # what it recorded is still listed


def test_markup_in_keys_file_names_and_platform_names_renders_as_text(tmp_path):
    folder = tmp_path / "names"
    folder.mkdir()
    document = json.loads((FILESYSTEMS / TMPFS).read_text())
    document["checks"]["jsonl_append"][MARKUP] = MARKUP
    document["platform"][MARKUP] = 1
    name = "platform-runtime-<img src=x onerror=alert(1)>.json"  # a local index names its platforms by file
    (folder / name).write_text(json.dumps(document))
    # Its verdict is beside the point (it fails only where the gate's sources moved on since the recording).
    assert cli("local", "--results", folder, "--output", tmp_path / "index.json").returncode in (0, 1)
    page = Page(report(tmp_path, tmp_path / "index.json", folder, "--baseline", FILESYSTEMS / "evidence-index.json",
                       "--baseline-artifacts", FILESYSTEMS).read_text())
    assert not [t for t, _ in page.tags if t in ("script", "img", "b")]
    assert MARKUP in page.joined and name in page.joined


def test_given_a_baseline_the_page_ends_with_the_diff(tmp_path):
    index, folder = markup_folder(tmp_path)
    html = report(tmp_path, index, folder, "--baseline", FILESYSTEMS / "evidence-index.json", "--baseline-artifacts",
                  FILESYSTEMS).read_text()
    text = Page(html).joined
    assert "What changed since the baseline" in text
    assert text.index("Bound files") < text.index("What changed since the baseline")
    assert "checks.jsonl_append.missing" in text
    # a baseline that does not verify is refused, not compared
    forged = json.loads((FILESYSTEMS / "evidence-index.json").read_text())
    forged["predicate"]["verdict"]["pass"] = False
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    done = cli("report", index, "--artifacts", folder, "--html", tmp_path / "r.html", "--baseline",
               tmp_path / "forged.json", "--baseline-artifacts", FILESYSTEMS)
    assert done.returncode == 3 and not (tmp_path / "r.html").exists()


def test_report_of_a_result_file_or_without_artifacts_is_a_usage_error(tmp_path):
    done = cli("report", FILESYSTEMS / TMPFS, "--artifacts", FILESYSTEMS, "--html", tmp_path / "r.html")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    done = cli("report", RUN_LOCAL / "evidence-index.json", "--artifacts", tmp_path / "nope", "--html",
               tmp_path / "r.html")
    assert done.returncode == 2 and not (tmp_path / "r.html").exists()


def render_in_chromium(tmp_path: Path, html: Path, banner: str) -> tuple[str, set[bytes], list[str], list[str]]:
    """(DOM, screenshot pixels, URLs the page asked for by the net log, paths the server was asked for)."""
    served = tmp_path / "served"
    served.mkdir(exist_ok=True)
    shutil.copy(html, served / html.name)
    recorder = Recorder(served)
    try:
        url = recorder.url(html.name)
        dom, urls = chromium(url, "--dump-dom")
        shot = tmp_path / f"{html.stem}.png"
        _, more = chromium(url, f"--screenshot={shot}")
        width, height, pixels = png_pixels(shot.read_bytes())
        assert (width, height) == (1280, 2000)
        assert bytes.fromhex(banner) in pixels, "the verdict banner's colour is not on the screenshot"
        return dom, pixels, page_requests(urls + more, url), list(recorder.paths)
    finally:
        recorder.close()


@needs_chromium
@pytest.mark.parametrize(("index", "word", "banner"), [(RUN_LOCAL, "PASS", "1a7f37"), (FAILING, "FAIL", "cf222e")])
def test_chromium_shows_the_verdict_and_each_check_and_the_page_asks_for_nothing(tmp_path, index, word, banner):
    html = report(tmp_path, index / "evidence-index.json", index)
    dom, pixels, asked, served = render_in_chromium(tmp_path, html, banner)
    text = Page(dom).joined
    assert f"Verdict: {word}" in text
    for check in GATE_CHECKS:
        assert check in text
    assert len(pixels) > 50, f"a blank screenshot: {len(pixels)} distinct pixel values"
    assert asked == [], f"the page asked for {asked}"
    assert served == [f"/{html.name}"] * 2  # the page itself, once per run; nothing else


@needs_chromium
def test_chromium_renders_injected_markup_as_text_and_fetches_nothing(tmp_path):
    index, folder = markup_folder(tmp_path)
    html = report(tmp_path, index, folder)
    dom, _, asked, served = render_in_chromium(tmp_path, html, "cf222e")
    page = Page(dom)
    assert not [t for t, _ in page.tags if t in ("script", "img")] and MARKUP in page.joined
    assert "/injected.png" not in " ".join(served) and asked == []


@needs_chromium
def test_the_request_detector_sees_a_page_that_does_fetch(tmp_path):
    """The control: without our page's policy, an image on the page and a font stylesheet from another host are
    fetched, and the detectors see both (the browser's own requests to its services are not the page's)."""
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><html><head><link rel="stylesheet" href="https://fonts.googleapis.com/css?'
                     'family=Roboto"></head><body><h1>Verdict: PASS</h1><img src="/leak.png"></body></html>')
    served_dir = tmp_path / "served"
    served_dir.mkdir()
    shutil.copy(leaky, served_dir / "leaky.html")
    recorder = Recorder(served_dir)
    try:
        url = recorder.url("leaky.html")
        _, urls = chromium(url, "--dump-dom")
    finally:
        recorder.close()
    assert "/leak.png" in recorder.paths
    asked = page_requests(urls, url)
    assert url.replace("leaky.html", "leak.png") in asked and "https://fonts.googleapis.com/css?family=Roboto" in asked
    assert not any("update.googleapis.com" in u or "clients2.google.com" in u for u in asked), asked


@needs_chromium
def test_the_blank_detector_sees_a_blank_screenshot(tmp_path):
    """The control: a page with nothing on it decodes to one or two pixel values, far below the bar above."""
    (tmp_path / "blank.html").write_text("<!DOCTYPE html><html><body></body></html>")
    shot = tmp_path / "blank.png"
    chromium((tmp_path / "blank.html").as_uri(), f"--screenshot={shot}")
    _, _, pixels = png_pixels(shot.read_bytes())
    assert len(pixels) <= 2, len(pixels)

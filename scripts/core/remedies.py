"""What a person does about an injection-vector refusal: one line per thing found, under 200 characters, saying what
was found, who owns it (or that nothing does) and the remedy. The gate's summary prints these first and the full
reason after them; the result keeps every fact they are made from (`isolation.present`, `refused_start_up`).
Pure functions of the recorded isolation facts. Stdlib only.
"""

from __future__ import annotations

from typing import Any

MAX_LINE = 199
PYTHON_I = "start the gate with `python -I` (or unset it)"
# (who put it there, what to do), for each vector that is not a start-up file the gate found.
VECTOR_REMEDIES: dict[str, tuple[str, str]] = {
    **{name: ("set by the caller's environment", PYTHON_I)
       for name in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPLATLIBDIR",
                    "PYTHONEXECUTABLE", "PYTHONCASEOK", "PYTHONWARNINGS", "PYTHONPYCACHEPREFIX")},
    **{name: ("set by the caller's environment", "unset it for the gate's step")
       for name in ("LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "OPENSSL_CONF", "OPENSSL_MODULES",
                    "OPENSSL_ENGINES", "GCONV_PATH", "COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")},
    "LD_LIBRARY_PATH": ("a folder on LD_LIBRARY_PATH that no system package owns",
                        "remove that folder from LD_LIBRARY_PATH for the gate's step"),
    "ld.so.preload": ("/etc/ld.so.preload, written by the machine's administrator",
                      "empty /etc/ld.so.preload, or run on a machine without it"),
    "._pth": ("a file beside the interpreter that no installer writes on Linux", "remove the ._pth file"),
    "unlisted module": ("no installed package lists it", "remove it from site-packages, or install it as a package"),
    "unlisted script": ("not one of the checkout's files", "remove it from scripts/ (git clean -n scripts/ lists it)"),
    "stdlib shadow": ("a folder the caller put ahead of the standard library", PYTHON_I),
    "sys.executable": ("the command that started the gate (exec -a, a wrapper)", "run the interpreter file itself"),
    "worker start-up": ("a wrapper or start-up code between the gate and its workers",
                        "run the gate with the interpreter itself, not through a wrapper"),
    "tracer": ("a debugger or tracer attached to the gate", "run the gate without strace, gdb or a supervisor"),
    "seccomp filter": ("a filter added for the gate itself", "run the gate without the wrapper that adds it"),
    "sitecustomize": ("found as a file no package owns", "remove it, or install it from a package that lists it"),
    "usercustomize": ("in the user site", "remove it, or start the gate with `python -I`"),
    ".pth": ("a .pth file no installed package owns", "remove it, or reinstall the package that should own it"),
}
REINSTALL = {"dpkg": "apt-get install --reinstall {name}", "wheel": "pip install --force-reinstall {name}=={version}",
             "conda": "conda install --force-reinstall {name}", "homebrew": "brew reinstall {name}"}


def clip(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 3].rstrip() + "..."


def start_up_line(entry: dict[str, Any]) -> str:
    """One refused start-up file: what it is and where, who owns it, what to do."""
    what = f"{entry.get('name')} in {entry.get('where') or 'a site directory'}"
    owner = entry.get("owner") if isinstance(entry.get("owner"), dict) else None
    problems = [str(p) for p in entry.get("problems") or []]
    if owner is None:
        return clip(f"{what}: no installed package owns it; remove it, or install it from a package that lists it")
    label = f"{owner.get('kind')} package {owner.get('name')} {owner.get('version')}".rstrip()
    if any("changed after" in p or "recorded no" in p or "not a sitecustomize.py a known" in p for p in problems):
        fix = REINSTALL.get(str(owner.get("kind")), "reinstall it").format(**{k: owner.get(k) for k in
                                                                            ("name", "version")})
        return clip(f"{what}: owned by {label}, but not the bytes it installed; restore them: {fix}")
    if any(p.startswith("bytecode_mismatched") for p in problems):
        return clip(f"{what}: owned by {label}, but its cached bytecode is not its source; delete its __pycache__ "
                     "entry")
    if any(p.startswith("maps_shadowing") for p in problems):
        return clip(f"{what}: owned by {label}; it maps a name the gate imports ({problems[0].split(' names ')[-1]});"
                     " rename that package")
    if any(p.startswith("imports_outside") for p in problems):
        return clip(f"{what}: owned by {label}, but it imports modules no package owns; remove them or reinstall")
    return clip(f"{what}: owned by {label}, but {problems[0] if problems else 'refused'}")


def headlines(isolation: Any) -> list[str]:
    """One line per vector present (per refused file for start-up code), in the order the gate found them."""
    isolation = isolation if isinstance(isolation, dict) else {}
    present = isolation.get("present") if isinstance(isolation.get("present"), list) else []
    refused = [e for e in isolation.get("refused_start_up") or [] if isinstance(e, dict)]
    lines: list[str] = []
    for vector in present:
        files = [e for e in refused if e.get("kind") == vector or (vector == ".pth" and e.get("kind") == "module")]
        if files:
            lines += [start_up_line(e) for e in files]
            continue
        if vector == "worker start-up" and _only_start_up_modules(isolation.get("findings")):
            lines.append("worker start-up: the workers ran the start-up code above (python -I still imports the "
                         "standard library's and the site directories'); the same remedy")
            continue
        who, fix = VECTOR_REMEDIES.get(str(vector), ("found by the gate", "see the detail below"))
        lines.append(clip(f"{vector}: {who}; {fix}"))
    return list(dict.fromkeys(lines))


def _only_start_up_modules(findings: Any) -> bool:
    """Whether every worker start-up finding names only the start-up modules the worker loaded (core.interpreter_rules
    writes `...: startup_modules ['sitecustomize']`): then the start-up file's own line says what to do."""
    marker = " was not started as the gate starts it: "
    workers = [str(f).split(marker, 1)[1] for f in findings or [] if marker in str(f)] if isinstance(findings, list) \
        else []
    return bool(workers) and all(detail.startswith("startup_modules [") and detail.endswith("]") and
                                 "], " not in detail for detail in workers)

"""Wine is a fact, never Windows: the gate records whether the Windows it ran on is Wine, and the rules that prove
Windows (rules.platforms) refuse a result that records Wine.

Under Wine every Windows fact the gate records says Windows: platform.system() is "Windows" (10.0.18362 under
Wine 8), python.exe and torch's _C are PE files, the lock is msvcrt's, and GetVolumeInformationW answers "NTFS"
for Wine's Z: drive whatever Linux file system lies under it. So Wine is looked for directly, two ways, and both
answers are recorded (`platform.wine`, common.wine_probe):
- `ntdll_version`: what ntdll's exported `wine_get_version` returns (Wine's own export; Windows' ntdll has none);
- `registry_key`: whether `HKLM\\Software\\Wine` exists (wineboot writes it into every Wine prefix).
Either one names Wine. Off Windows neither is looked for (both null). Stdlib only.

What the judge can re-derive: the verdict "Wine" from either recorded answer (edit one, the other still names it),
and that a gate hashing this file always records both (rules.result_format: a result with `platform.wine` removed
is refused). A result whose two answers were both rewritten to say "not Wine" agrees with itself: no recorded
fact shows Wine then, as no recorded fact shows any consistent rewrite (docs/wine.md).
"""

from __future__ import annotations

from typing import Any


def named(platform: Any) -> str | None:
    """"Wine 8.0" (or Wine, by its registry key) when a recorded answer names Wine; None when none does."""
    wine = platform.get("wine") if isinstance(platform, dict) else None
    if not isinstance(wine, dict):
        return None
    version = wine.get("ntdll_version")
    if isinstance(version, str):
        return f"Wine {version}".strip()
    if wine.get("registry_key") is True:
        return "Wine (its registry key HKLM\\Software\\Wine)"
    return None


def record_problems(result: dict[str, Any]) -> list[str]:
    """`platform.wine` as the gate records it: on Windows both answers (a version string or null, a bool),
    elsewhere neither (both null). A result without it is judged by rules.result_format."""
    platform = result.get("platform") if isinstance(result.get("platform"), dict) else {}
    if "wine" not in platform:
        return []
    wine = platform["wine"]
    if not (isinstance(wine, dict) and set(wine) == {"ntdll_version", "registry_key"}):
        return [f"platform.wine is {wine!r}: the gate records exactly ntdll_version and registry_key"]
    version, key = wine["ntdll_version"], wine["registry_key"]
    if platform.get("system") == "Windows":
        if not (version is None or isinstance(version, str)) or not isinstance(key, bool):
            return [f"platform.wine is {wine!r}: on Windows the gate records ntdll's wine_get_version (a string or "
                    "null) and whether HKLM\\Software\\Wine exists (true or false)"]
        return []
    if version is not None or key is not None:
        return [f"platform.wine is {wine!r} with platform.system {platform.get('system')!r}: Wine is looked for "
                "only on Windows (both null elsewhere)"]
    return []

"""Whether the Windows this process runs on is Wine, asked two ways (ntdll's `wine_get_version` export, the
`HKLM\\Software\\Wine` registry key) and recorded as `platform.wine` by common.provenance; rules.wine judges what
was recorded. Stdlib only."""

from __future__ import annotations

import os
from typing import Any

REGISTRY_KEY = r"Software\Wine"  # under HKEY_LOCAL_MACHINE


def probe() -> dict[str, Any]:
    """This process's answers: {"ntdll_version": str | None, "registry_key": bool | None}."""
    if os.name != "nt":
        return {"ntdll_version": None, "registry_key": None}
    return {"ntdll_version": _ntdll_version(), "registry_key": _registry_key()}


def _ntdll_version() -> str | None:
    import ctypes

    try:
        function = ctypes.WinDLL("ntdll").wine_get_version  # AttributeError: no such export (Windows)
    except (AttributeError, OSError):
        return None
    function.argtypes, function.restype = [], ctypes.c_char_p
    value = function()
    return value.decode("ascii", errors="replace") if value else ""


def _registry_key() -> bool:
    import winreg

    try:
        winreg.CloseKey(winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, REGISTRY_KEY))
    except FileNotFoundError:
        return False
    except OSError:  # there, but not readable by this user
        return True
    return True

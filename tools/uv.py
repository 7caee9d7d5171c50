"""The pinned uv, with nothing but Python and PyPI: ``python3 tools/uv.py <uv arguments>``.

Where ``pip install`` into the system Python is refused (PEP 668: Debian 12's, Ubuntu 24.04's and
Homebrew's Python) and no venv module is installed, this still works: it fetches uv's wheel for
this machine from PyPI once, checks it against the digest pinned here, keeps the ``uv`` binary in
``.tools/``, and runs it with the arguments given.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import stat
import sys
import urllib.request
import zipfile
from pathlib import Path

VERSION = "0.13.9"
INDEX = "https://pypi.org/simple/uv/"
"""PyPI's index of uv's files (PEP 691's JSON form), which says where each one is."""
WHEELS = {
    ("linux", "x86_64", "gnu"): (
        "uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    ),
    ("linux", "x86_64", "musl"): (
        "uv-0.13.9-py3-none-musllinux_1_1_x86_64.whl",
        "2c45530751517d6c3bbc69a19473f6effe47cce047bede01ffd8af7ea7b36b25",
    ),
    ("linux", "aarch64", "gnu"): (
        "uv-0.13.9-py3-none-manylinux_2_28_aarch64.whl",
        "ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375",
    ),
    ("darwin", "x86_64", ""): (
        "uv-0.13.9-py3-none-macosx_10_12_x86_64.whl",
        "c16ed11e013557536b3e60065f1b912f6407bd6518e041b961e23ef9e6b4fbf5",
    ),
    ("darwin", "arm64", ""): (
        "uv-0.13.9-py3-none-macosx_11_0_arm64.whl",
        "66c512266d633bef48384a1f53003f41f2a8e7b36fe6e7fbfd3e0fd52d96fa63",
    ),
    ("win32", "amd64", ""): (
        "uv-0.13.9-py3-none-win_amd64.whl",
        "6a44b2ed8111d2f60d2b92627c5dccda3f7ed7570b18ce115e569cd68c28246b",
    ),
}
"""This version's wheel for each machine, and its SHA-256 as PyPI lists it."""


def this_machine() -> tuple[str, str, str]:
    machine = platform.machine().lower().replace("arm64", "aarch64")
    if sys.platform == "darwin":
        return ("darwin", "arm64" if machine == "aarch64" else machine, "")
    if sys.platform == "win32":
        return ("win32", "amd64" if machine in {"amd64", "x86_64"} else machine, "")
    libc = "gnu" if platform.libc_ver()[0] == "glibc" else "musl"
    return ("linux", machine, libc)


def binary() -> Path:
    """The pinned uv's binary, fetched and checked on first use."""
    root = Path(__file__).resolve().parents[1] / ".tools" / f"uv-{VERSION}"
    exe = root / ("uv.exe" if sys.platform == "win32" else "uv")
    if exe.exists():
        return exe
    where = this_machine()
    if where not in WHEELS:
        raise SystemExit(
            f"tools/uv.py: no uv {VERSION} wheel pinned for {where}; install uv {VERSION} "
            "(https://docs.astral.sh/uv/) and run `uv` in place of `python3 tools/uv.py`"
        )
    filename, digest = WHEELS[where]
    sys.stderr.write(f"tools/uv.py: fetching uv {VERSION} from PyPI (once)\n")
    json_form = {"Accept": "application/vnd.pypi.simple.v1+json"}
    listing = urllib.request.Request(INDEX, headers=json_form)  # noqa: S310 - https, fixed
    with urllib.request.urlopen(listing, timeout=60) as response:  # noqa: S310 - https, fixed
        files = json.load(response)["files"]
    url = next(f["url"] for f in files if f["filename"] == filename)
    if not url.startswith("https://"):
        raise SystemExit(f"tools/uv.py: PyPI lists {filename} at {url}, not over https")
    with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 - https, checked
        wheel = response.read()
    if hashlib.sha256(wheel).hexdigest() != digest:
        raise SystemExit(f"tools/uv.py: the wheel from PyPI is not the one pinned ({filename})")
    member = f"uv-{VERSION}.data/scripts/{exe.name}"
    root.mkdir(parents=True, exist_ok=True)
    partial = exe.with_suffix(".partial")
    partial.write_bytes(zipfile.ZipFile(io.BytesIO(wheel)).read(member))
    partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    partial.replace(exe)
    return exe


def main() -> None:
    exe = binary()
    arguments = [str(exe), *sys.argv[1:]]
    if sys.platform == "win32":  # no exec there: run it and pass its status on
        import subprocess

        raise SystemExit(subprocess.call(arguments))
    os.execv(exe, arguments)  # noqa: S606 - uv itself, with the caller's arguments


if __name__ == "__main__":
    main()

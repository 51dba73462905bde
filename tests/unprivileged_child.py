"""Run ``ragcov ARGS`` as an unprivileged user (``nobody``) from a root test process.

The interpreter and its standard library may sit where ``nobody`` cannot read them
(``/root/.pyenv``), so the user cannot start Python itself. This script is started as
root, runs the same command once as root against scratch paths (so every module the
command imports lazily is loaded and the model is read), then drops to ``nobody`` and
runs the command for real, printing a JSON line ``{"code", "out", "err"}``.

Usage: python unprivileged_child.py SCRATCH_JSON ARGS_JSON
  SCRATCH_JSON: the warm-up's arguments (root, scratch cache and data file)
  ARGS_JSON: the real command's arguments (run as nobody)
Environment: RAGCOV_CACHE_DIR_REAL is the cache folder of the real command.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pwd
import sys
import warnings


def _run(args: list[str]) -> tuple[int, str, str]:
    from ragcov.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    said = err.getvalue() + "".join(f"ragcov: warning: {w.message}\n" for w in caught)
    return code, out.getvalue(), said


def main() -> None:
    warm, real = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    code, _, err = _run(warm)
    if code != 0:
        print(json.dumps({"code": -1, "out": "", "err": f"warm-up failed: {err}"}))
        return
    nobody = pwd.getpwnam("nobody")
    os.environ["RAGCOV_CACHE_DIR"] = os.environ["RAGCOV_CACHE_DIR_REAL"]
    os.environ["HOME"] = "/nonexistent"
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    code, out, err = _run(real)
    print(json.dumps({"code": code, "out": out, "err": err}))


if __name__ == "__main__":
    main()

"""The local LLM's own process: a crash of llama.cpp there is an error here, not a dead ragcov.

llama.cpp is native code. Built for another CPU (a "native" build that uses AMX or
AVX-512 on a machine whose OS or CPU lacks them) it dies on its first matrix
product with SIGILL, and in process that kills ragcov with exit 132 and no word.
So :class:`~ragcov.generation.llamacpp.LlamaCppGenerator` runs this file as a
child (``python llm_process.py``): it loads the model once and answers requests,
one JSON object per line on its stdin and stdout. When the child dies the parent
sees the pipe close and turns the exit status into one line (:func:`describe_exit`).

This file imports nothing from ragcov and nothing outside the standard library
but llama_cpp (loaded in the child only), so the child starts in a few
milliseconds on top of the model load, and the parent never maps llama.cpp's
native library at all.

The protocol (one JSON object per line; the parent speaks first):

* parent -> ``{"model_path": ..., "n_ctx": ..., "n_threads": ...}``
* child  -> ``{"ok": true}`` once the model is loaded, or ``{"error": "..."}``
* parent -> ``{"kind": "completion" | "chat", "args": {...}}``, the keyword
  arguments of ``Llama.create_completion`` / ``create_chat_completion``
* child  -> ``{"text": ..., "usage": {...}}`` or ``{"error": "..."}``

End of input ends the child (exit 0), so a parent that goes away, however it
goes, leaves no child behind once the request in flight is done. The child
ignores SIGINT: a Ctrl-C is the parent's to handle (it kills the child).

Fault injection, for tests only: with ``RAGCOV_TEST_LLM_CRASH=SIGNAME`` (e.g.
``SIGILL``) in its environment the child kills itself with that signal on its
first request, like a llama.cpp built for another CPU; ``SIGNAME:N`` waits for
the N-th request, and ``SIGNAME:0`` dies at start-up, before loading the model.
The variable is read in the child only and nothing in ragcov sets it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

CRASH_ENV = "RAGCOV_TEST_LLM_CRASH"
PORTABLE_BUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
                  "pip install --force-reinstall --no-cache-dir llama-cpp-python")
_SIGNAL_WORDS = {
    "SIGILL": "illegal instruction",
    "SIGSEGV": "segmentation fault",
    "SIGBUS": "bus error",
    "SIGFPE": "arithmetic fault",
    "SIGABRT": "aborted",
    "SIGKILL": "killed; out of memory?",
    "SIGTERM": "terminated",
}


def describe_exit(returncode: int | None, last_line: str = "") -> str:
    """One line saying how the child ended (``Popen.returncode``: -N for signal N).

    ``last_line``, the last line the child wrote to stderr (a Python exception,
    say), is added for an exit; a signal leaves no message of its own, and the
    last line then is only llama.cpp's chatter.
    """
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        words = _SIGNAL_WORDS.get(name)
        msg = f"the local LLM process died with {name}" + (f" ({words})" if words else "")
        if name == "SIGILL":
            msg += (": llama-cpp-python was probably built for another CPU; "
                    f"rebuild it portably: {PORTABLE_BUILD}")
        return msg
    msg = f"the local LLM process exited unexpectedly (status {returncode})"
    last = " ".join(last_line.split())
    return f"{msg}: {last[:300]}" if last else msg


def _crash_plan(value: str | None) -> tuple[int, int] | None:
    """``SIGNAME[:N]`` -> (signal number, request number); None when unset or unknown."""
    if not value:
        return None
    name, _, nth = value.strip().partition(":")
    name = name.upper()
    try:
        sig = int(signal.Signals[name if name.startswith("SIG") else "SIG" + name])
        return sig, int(nth) if nth else 1
    except (KeyError, ValueError):
        return None


def _send(out: Any, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _maybe_crash(plan: tuple[int, int] | None, request: int) -> None:
    if plan is not None and plan[1] == request:
        os.kill(os.getpid(), plan[0])


def serve() -> int:
    """The child's main loop; returns its exit status."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The replies get a private copy of stdout; fd 1 itself goes to stderr, so
    # whatever the native code prints cannot corrupt the protocol.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin
    plan = _crash_plan(os.environ.get(CRASH_ENV))
    line = inp.readline()
    if not line:
        return 0
    config = json.loads(line)
    _maybe_crash(plan, 0)
    try:
        from llama_cpp import Llama

        llm = Llama(model_path=config["model_path"], n_ctx=config["n_ctx"], verbose=False,
                    n_threads=config["n_threads"])
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
        _send(out, {"error": f"{exc.__class__.__name__}: {exc}"})
        return 0
    _send(out, {"ok": True})
    for request, line in enumerate(inp, start=1):
        _maybe_crash(plan, request)
        try:
            req = json.loads(line)
            if req["kind"] == "chat":
                resp = llm.create_chat_completion(**req["args"])
                text = resp["choices"][0]["message"]["content"] or ""
            else:
                resp = llm.create_completion(**req["args"])
                text = resp["choices"][0]["text"]
            reply = {"text": text, "usage": resp.get("usage") or {}}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
            reply = {"error": f"{exc.__class__.__name__}: {exc}"}
        try:
            _send(out, reply)
        except BrokenPipeError:
            return 0
    return 0


if __name__ == "__main__":
    # Run by path, this file's folder heads sys.path; nothing here should come from it.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    try:
        status = serve()
    except BrokenPipeError:   # the parent went away mid-reply
        status = 0
    sys.exit(status)

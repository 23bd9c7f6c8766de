#!/usr/bin/env bash
# make test: start (or reuse) a disposable PostgreSQL under .data/pgtest, or
# use CONSENSUS_TEST_DATABASE_URL (loopback or Unix socket only: the suite
# creates and drops databases), then run every check.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
mkdir -p .data && chmod 711 .data
if [[ -z ${CONSENSUS_TEST_DATABASE_URL:-} ]]; then
  CONSENSUS_TEST_DATABASE_URL=$(deploy/local/pg.sh start .data/pgtest --fast)
fi
export CONSENSUS_TEST_DATABASE_URL

# The web page tests drive a real browser: Debian's chromium.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing Debian's chromium for the browser tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  else
    echo "test.sh: the browser tests need Chromium: install it (sudo apt-get install chromium) and run make test again" >&2
    exit 1
  fi
fi

# The reply tests read a real Dovecot mailbox: Debian's dovecot-imapd.
if [[ ! -x /usr/sbin/dovecot ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing Debian's dovecot-imapd for the reply mailbox tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >&2
  else
    echo "test.sh: the reply tests need Dovecot: install it (sudo apt-get install dovecot-imapd) and run make test again" >&2
    exit 1
  fi
fi

# The bench smoke test (internal/cmd/consensus-bench) fails without its
# tools: wrk (its load generator) and OpenSSH's ssh-keygen, ssh-agent and
# ssh-add (the log's witness signs through an ssh-agent). pgbench comes
# with the postgresql package pg.sh installs.
need=()
command -v wrk >/dev/null || need+=(wrk)
for tool in ssh-keygen ssh-agent ssh-add; do
  command -v "$tool" >/dev/null || { need+=(openssh-client); break; }
done
if (( ${#need[@]} > 0 )); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${need[*]} for the bench smoke test" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
  else
    echo "test.sh: the bench smoke test needs ${need[*]}: install them (sudo apt-get install ${need[*]}) and run make test again" >&2
    exit 1
  fi
fi

if [[ -n ${BENCH:-} ]]; then
  exec go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-6}" ./...
fi

echo "== gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[[ -z $unformatted ]] || { echo "gofmt would change: $unformatted"; exit 1; }
go vet ./...

echo "== contract lint (redocly, ajv)"
tools/lint.sh

echo "== record and log proof conformance vectors, standard-library Node verifier (tools/verify-record.mjs and its published bundle)"
node tools/verify-record.mjs --conformance conformance/records
node tools/dist/verify-record.mjs --conformance conformance/records

echo "== deploy artifacts (make test-deploy)"
make --no-print-directory test-deploy

echo "== generated Go client against a real server (make test-client)"
make --no-print-directory test-client

# The people's browser test drives chromium through the pinned
# playwright-core and axe-core of tools/browser.
if [[ ! -d tools/browser/node_modules || tools/browser/package-lock.json -nt tools/browser/node_modules ]]; then
  npm ci --prefix tools/browser --no-audit --no-fund --loglevel=error
  touch tools/browser/node_modules
fi

# -artifacts keeps what tests save with t.ArtifactDir (the browser test's
# screenshots) under .data/test-output/_artifacts.
echo "== go test -race"
mkdir -p .data/test-output
go test -race -count=1 -timeout 15m -artifacts -outputdir "$root/.data/test-output" ./...

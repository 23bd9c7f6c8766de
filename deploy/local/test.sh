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

if [[ -n ${BENCH:-} ]]; then
  exec go test -run '^$' -bench . -benchmem -count "${BENCH_COUNT:-6}" ./...
fi

echo "== gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
[[ -z $unformatted ]] || { echo "gofmt would change: $unformatted"; exit 1; }
go vet ./...

echo "== contract lint (redocly, ajv)"
tools/lint.sh

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

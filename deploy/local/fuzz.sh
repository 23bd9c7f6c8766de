#!/usr/bin/env bash
# make fuzz: run every fuzz target of the module (each func FuzzXxx in a
# _test.go file) for FUZZTIME each (default 30s), one after the other.
# FUZZ, a regular expression, picks targets by name (default: all).
# Inputs that fail are saved under the package's testdata/fuzz/ by go test;
# commit them: `make test` replays every saved input and every seed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
fuzztime=${FUZZTIME:-30s}
filter=${FUZZ:-.}
failed=()
ran=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  compgen -G "$dir/*_test.go" >/dev/null || continue
  for target in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$dir"/*_test.go | sort -u); do
    [[ $target =~ $filter ]] || continue
    echo "== $pkg $target ($fuzztime)"
    ran=$((ran + 1))
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
      failed+=("$pkg $target")
    fi
  done
done
echo "== $ran fuzz targets, ${#failed[@]} failed"
for f in "${failed[@]}"; do echo "FAIL $f"; done
[[ ${#failed[@]} -eq 0 ]]

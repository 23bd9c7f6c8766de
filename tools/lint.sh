#!/usr/bin/env bash
# Lints the public contract: redocly lint of openapi.json and openapi-agent.json
# (0 errors) and an Ajv 2020-12 strict compile of every JSON Schema under
# schemas/. Installs the pinned tools from tools/package-lock.json on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "tools/lint.sh: the contract lint needs Node.js 20+ with npm (https://nodejs.org, or your distribution's nodejs and npm packages)" >&2
  exit 1
fi
if [[ ! -d tools/node_modules ]] || [[ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]]; then
  npm ci --prefix tools --no-audit --no-fund --loglevel=error
fi
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

# Both documents are self-contained (the JSON Schemas are components), so
# redocly lints them as published and needs no network.
for doc in openapi.json openapi-agent.json; do
  echo "== redocly lint $doc"
  tools/node_modules/.bin/redocly lint --config redocly.yaml --format=stylish "$doc" 2>&1 | grep -v -E 'Node\.js|nodejs\.org|^ *║|^ *╔|^ *╚|^$' || true
  tools/node_modules/.bin/redocly lint --config redocly.yaml --format=summary "$doc" >/dev/null 2>&1 || {
    echo "redocly lint found errors in $doc"; exit 1; }
done

echo "== ajv: compile schemas/ (JSON Schema 2020-12, strict)"
node tools/check-schemas.mjs schemas

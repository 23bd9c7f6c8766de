#!/usr/bin/env bash
# make run: start (or reuse) the private PostgreSQL under .data/, generate the
# local secrets once (0600: token key, operator token, record-signing key),
# and serve consensusd on http://localhost:8080 (listening on 127.0.0.1:8080;
# passkeys take no IP address as their origin) with invitation mail
# delivered into the Maildir .data/mail.
#
#   deploy/local/run.sh check   print make run's settings (consensusd config check
#                               with the same environment) instead of serving
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/.data
mkdir -p "$data"
chmod 711 "$data" # postgres (as root) must traverse it; secrets below are 0600

if [[ -z ${DATABASE_URL:-} ]]; then
  DATABASE_URL=$("$root/deploy/local/pg.sh" start "$data/pg")
fi
if [[ ! -s $data/token-key ]]; then
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$data/token-key")
fi
if [[ ! -s $data/signing-key ]]; then
  # the service's Ed25519 record-signing key, as a 32-byte seed in hex
  (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$data/signing-key")
fi
if [[ ! -s $data/operator-token ]]; then
  (umask 077; printf 'cso_%s' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$data/operator-token")
fi

export CONSENSUS_ENV=local DATABASE_URL
export CONSENSUS_MAIL_URL=${CONSENSUS_MAIL_URL:-maildir://$data/mail}
[[ -n ${CONSENSUS_TOKEN_KEY:-} ]] || export CONSENSUS_TOKEN_KEY_FILE=$data/token-key
[[ -n ${CONSENSUS_OPERATOR_TOKEN:-} ]] || export CONSENSUS_OPERATOR_TOKEN_FILE=$data/operator-token
[[ -n ${CONSENSUS_SIGNING_KEY:-} || -n ${CONSENSUS_SIGNING_KEY_FILE:-} ]] || export CONSENSUS_SIGNING_KEY_FILE=$data/signing-key
listen=${CONSENSUS_LISTEN:-127.0.0.1:8080}

# The operations listener (/metrics, /livez, /readyz) on its default
# address, or on a free port when another program holds that one: a local
# run must not stop because of it. The service logs the port it got.
if [[ -n ${CONSENSUS_OPS_LISTEN:-} ]]; then
  ops="http://$CONSENSUS_OPS_LISTEN"
elif (exec 3<>/dev/tcp/127.0.0.1/8079) 2>/dev/null; then
  export CONSENSUS_OPS_LISTEN=127.0.0.1:0
  ops="127.0.0.1:8079 is taken, so a free port: see \"ops\" in the \"consensusd serving\" line below"
else
  ops="http://127.0.0.1:8079"
fi

if [[ ${1:-} == check ]]; then
  exec "$root/bin/consensusd" config check
fi

cat <<MSG
consensusd (local run)
  listening on     $listen
  operations       $ops (/livez, /readyz, /metrics)
  public origin    ${CONSENSUS_PUBLIC_ORIGIN:-http://localhost:${listen##*:}}  (open the console at /console/ there)
  operator token   $(if [[ -n ${CONSENSUS_OPERATOR_TOKEN:-} ]]; then echo "(from CONSENSUS_OPERATOR_TOKEN)"; else cat "$data/operator-token"; fi)
                   (also in .data/operator-token; the consensus CLI reads it from there)
  invitation mail  ${CONSENSUS_MAIL_URL}
  database         private PostgreSQL under .data/pg (stop it with: deploy/local/pg.sh stop .data/pg)
MSG
exec "$root/bin/consensusd"

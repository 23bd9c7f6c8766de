#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL cluster for local runs and tests.
#
#   deploy/local/pg.sh start DIR [--fast]   initialize if needed, start, print the DATABASE_URL
#   deploy/local/pg.sh stop DIR
#   deploy/local/pg.sh url DIR                the DATABASE_URL of the service's role
#   deploy/local/pg.sh admin-url DIR          the superuser's, for psql and pg_dump
#
# The service connects as consensus_app, an ordinary role (no superuser, no
# BYPASSRLS, allowed to create databases for the test suite) that owns the
# consensus database: row-level security binds it as it does in production.
# The cluster's superuser, consensus, is for administration only, and
# installs the audit guard (deploy/kubernetes/overlays/cloudnativepg/
# audit-guard.sql) in the consensus database and in template1.
#
# The cluster listens on a Unix socket only (no TCP port to collide with), in
# DIR/run with mode 0700, so only its owner can connect. The socket's port
# number is pinned to 5432 in the server and in the printed URL alike, so a
# PGPORT in the caller's environment changes neither. PostgreSQL refuses to
# run as root: as root the cluster runs as the unprivileged "postgres" user.
# --fast turns off fsync (test clusters only: their data is disposable).
set -euo pipefail

die() { echo "pg.sh: $*" >&2; exit 1; }

cmd=${1:-}; dir=${2:-}; fast=${3:-}
[[ -n $cmd && -n $dir ]] || die "usage: $0 start|stop|url|admin-url DIR [--fast]"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

find_bin() {
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"; return
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $d/pg_ctl && -x $d/initdb ]] && { echo "$d"; return; }
  done
}

bin=$(find_bin)
if [[ -z $bin ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "pg.sh: PostgreSQL server binaries not found; installing the postgresql package with apt-get" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    bin=$(find_bin)
  fi
  [[ -n $bin ]] || die "PostgreSQL 14+ server binaries (initdb, pg_ctl) not found. Install them, e.g. 'sudo apt-get install postgresql', or set DATABASE_URL to an existing server."
fi

# As root, everything runs as postgres, which must be able to reach $dir.
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
  chown postgres: "$dir"
  as_owner=(runuser -u postgres --)
fi
# Keep the cluster elsewhere, keyed by the checkout path, when its owner
# cannot enter $dir (a checkout under /root, say) or when the socket path
# would pass the 107-byte limit of Unix sockets.
if ! "${as_owner[@]}" test -w "$dir" || (( ${#dir} > 80 )); then
  alt=/var/tmp/consensus-pg-$(printf '%s' "$dir" | sha256sum | cut -c1-16)
  mkdir -p "$alt"
  [[ $(id -u) -ne 0 ]] || chown postgres: "$alt"
  chmod 700 "$alt"
  ln -sfn "$alt" "$dir/cluster-location"
  dir=$alt
fi

data=$dir/data
sock=$dir/run
port=5432
url="postgres:///consensus?host=$sock&port=$port&user=consensus_app&sslmode=disable"
admin_url="postgres:///consensus?host=$sock&port=$port&user=consensus&sslmode=disable"
# libpq's defaults must not leak into the tools run below.
unset PGPORT PGHOST PGHOSTADDR PGDATABASE PGUSER PGSERVICE

# answers: the server accepts a query on the pinned socket (a live process
# whose socket is elsewhere, or which is stopped, does not answer).
answers() {
  "${as_owner[@]}" "$bin/psql" -h "$sock" -p "$port" -U consensus -d postgres -tAc 'SELECT 1' >/dev/null 2>&1
}

case $cmd in
  url) echo "$url" ;;
  admin-url) echo "$admin_url" ;;
  stop)
    if [[ -f $data/postmaster.pid ]]; then "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi ;;
  start)
    if [[ ! -f $data/PG_VERSION ]]; then
      "${as_owner[@]}" "$bin/initdb" -D "$data" -U consensus -E UTF8 --locale=C --auth=trust >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    fi
    "${as_owner[@]}" mkdir -p "$sock"
    "${as_owner[@]}" chmod 700 "$sock"
    opts="-c listen_addresses='' -c port=$port -c unix_socket_directories='$sock' -c max_connections=200"
    if [[ $fast == --fast ]]; then
      opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    fi
    if "${as_owner[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      # Running, but started by an older pg.sh or with another port: restart
      # it with the pinned settings rather than print a URL nothing answers.
      if ! answers; then
        echo "pg.sh: the server in $data runs but does not answer on $sock (port $port); restarting it" >&2
        "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null \
          || die "pg_ctl stop failed (log: $dir/server.log)"
      fi
    fi
    if ! "${as_owner[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -o "$opts" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/server.log" >&2; die "pg_ctl start failed (log: $dir/server.log)"; }
    fi
    answers || { tail -20 "$dir/server.log" >&2; die "the server in $data does not answer on $sock (port $port) (log: $dir/server.log)"; }
    psql=("${as_owner[@]}" "$bin/psql" -h "$sock" -p "$port" -U consensus -v ON_ERROR_STOP=1 -qtA)
    if ! "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname='consensus_app'" | grep -q 1; then
      "${psql[@]}" -d postgres -c "CREATE ROLE consensus_app LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS" >/dev/null
    fi
    if ! "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname='consensus'" | grep -q 1; then
      "${as_owner[@]}" "$bin/createdb" -h "$sock" -p "$port" -U consensus -O consensus_app consensus
    fi
    # A database made before the service had its own role: hand it and
    # everything in it to consensus_app, once.
    if ! "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE d.datname='consensus' AND r.rolname='consensus_app'" | grep -q 1; then
      "${psql[@]}" -d consensus >/dev/null <<'SQL'
ALTER DATABASE consensus OWNER TO consensus_app;
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') LOOP
    EXECUTE format('ALTER TABLE public.%I OWNER TO consensus_app', r.relname);
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind = 'S' AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')) LOOP
    EXECUTE format('ALTER SEQUENCE public.%I OWNER TO consensus_app', r.relname);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO consensus_app', r.f);
  END LOOP;
END;
$$;
SQL
    fi
    # The audit guard: event triggers, which only a superuser can create,
    # that refuse even the table's owner (consensus_app) any change to
    # audit_entries once it holds an entry (see the file). In template1 too,
    # so every database made later, the test suite's included, has it.
    # Idempotent: it runs at every start and so follows changes to the file.
    guard=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kubernetes/overlays/cloudnativepg" && pwd)/audit-guard.sql
    for db in template1 consensus; do
      "${psql[@]}" -d "$db" >/dev/null <"$guard" || die "installing $guard in $db failed"
    done
    echo "$url" ;;
  *) die "unknown command $cmd" ;;
esac

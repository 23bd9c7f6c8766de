#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL cluster for local runs and tests,
# alone or as a primary with a streaming standby (SPEC §22 R-HA-FAILOVER).
#
#   deploy/local/pg.sh start DIR [--fast] [--primary]
#                                             initialize if needed, start, print the DATABASE_URL
#   deploy/local/pg.sh stop DIR
#   deploy/local/pg.sh url DIR                the DATABASE_URL of the service's role
#   deploy/local/pg.sh admin-url DIR          the superuser's, for psql and pg_dump
#
# A primary with a standby on one machine (each cluster in its own DIR, on
# its own socket directory):
#
#   deploy/local/pg.sh ha-start PRIMARY_DIR STANDBY_DIR [--fast] [--async]
#       start PRIMARY_DIR (as start --primary), then a standby of it in
#       STANDBY_DIR (as standby-start), then, unless --async, make the
#       standby synchronous: the primary's postgresql.auto.conf gets
#       synchronous_standby_names = 'consensus_standby' (a commit returns
#       only once the standby has flushed it); print the two-host URL
#       (ha-url PRIMARY_DIR STANDBY_DIR).
#   deploy/local/pg.sh standby-start DIR PRIMARY_DIR [--fast]
#       the first time, copy PRIMARY_DIR's running cluster with
#       pg_basebackup -R -S consensus_standby -C (a replication slot, so the
#       primary keeps the WAL the standby has not read) and name the
#       standby application_name=consensus_standby in its primary_conninfo;
#       start it and wait until it streams. It prints its own URL (it
#       answers read-only until promoted).
#   deploy/local/pg.sh promote DIR     promote the standby in DIR and wait until it accepts writes
#   deploy/local/pg.sh ha-url DIR DIR… the service's URL naming every cluster's socket:
#       postgres:///consensus?host=SOCK1,SOCK2&port=5432,5432&…&target_session_attrs=read-write
#       (pgx tries the hosts in order and keeps only one that accepts writes)
#
# The old primary must stay down after a promotion (or be rebuilt as a new
# standby: remove its DIR and standby-start it from the promoted one); both
# running read-write would split the data. The promoted standby names no
# synchronous standby of its own: commits no longer wait until a new standby
# is made synchronous.
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
# --fast turns off fsync (test clusters only: their data is disposable), and
# synchronous_commit too, except on a primary (--primary, or a cluster whose
# postgresql.auto.conf names a synchronous standby), whose commits must still
# wait for their standby, and on a standby, which may become a primary.
set -euo pipefail

die() { echo "pg.sh: $*" >&2; exit 1; }

cmd=${1:-}; dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: $0 start|stop|url|admin-url DIR [--fast] [--primary] | ha-start PRIMARY_DIR STANDBY_DIR [--fast] [--async] | standby-start DIR PRIMARY_DIR [--fast] | promote DIR | ha-url DIR DIR…"
shift 2
# The standby's name in the primary's synchronous_standby_names, its
# application_name and its replication slot.
standby_name=consensus_standby

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

# As root, everything runs as postgres, which must be able to reach the
# cluster's directory.
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin postgres
  as_owner=(runuser -u postgres --)
fi
port=5432
# libpq's defaults must not leak into the tools run below.
unset PGPORT PGHOST PGHOSTADDR PGDATABASE PGUSER PGSERVICE

# locate D: set dir, data and sock for the cluster given as D. It keeps the
# cluster elsewhere, keyed by the checkout path, when its owner cannot
# enter D (a checkout under /root, say) or when the socket path would pass
# the 107-byte limit of Unix sockets.
locate() {
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  [[ $(id -u) -ne 0 ]] || chown postgres: "$dir"
  if ! "${as_owner[@]}" test -w "$dir" || (( ${#dir} > 80 )); then
    local alt
    alt=/var/tmp/consensus-pg-$(printf '%s' "$dir" | sha256sum | cut -c1-16)
    mkdir -p "$alt"
    [[ $(id -u) -ne 0 ]] || chown postgres: "$alt"
    chmod 700 "$alt"
    ln -sfn "$alt" "$dir/cluster-location"
    dir=$alt
  fi
  data=$dir/data
  sock=$dir/run
}

service_url() { echo "postgres:///consensus?host=$1&port=$2&user=consensus_app&sslmode=disable${3:-}"; }

# answers: the server accepts a query on the pinned socket (a live process
# whose socket is elsewhere, or which is stopped, does not answer).
answers() {
  "${as_owner[@]}" "$bin/psql" -h "$sock" -p "$port" -U consensus -d postgres -tAc 'SELECT 1' >/dev/null 2>&1
}

# sql DB QUERY: one query as the superuser, its rows unaligned.
sql() { "${as_owner[@]}" "$bin/psql" -h "$sock" -p "$port" -U consensus -v ON_ERROR_STOP=1 -qtA -d "$1" -c "$2"; }

# names_sync_standby: the cluster's postgresql.auto.conf (ALTER SYSTEM)
# names a synchronous standby as its last word on it.
names_sync_standby() {
  local v
  v=$("${as_owner[@]}" sh -c "grep -E '^[[:space:]]*synchronous_standby_names' '$data/postgresql.auto.conf' 2>/dev/null | tail -1" || true)
  [[ -n $v && $v != *"''"* ]]
}

# serve FAST PRIMARY: start the cluster in $data unless it runs and
# answers, and wait until it answers.
serve() {
  local fast=$1 primary=$2
  "${as_owner[@]}" mkdir -p "$sock"
  "${as_owner[@]}" chmod 700 "$sock"
  local opts="-c listen_addresses='' -c port=$port -c unix_socket_directories='$sock' -c max_connections=200"
  if [[ $fast == 1 ]]; then
    opts="$opts -c fsync=off -c full_page_writes=off"
    if [[ $primary != 1 ]] && ! names_sync_standby; then
      opts="$opts -c synchronous_commit=off"
    fi
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
}

# start FAST PRIMARY: initialize if needed, serve, and make the service's
# role and database.
start() {
  if [[ ! -f $data/PG_VERSION ]]; then
    "${as_owner[@]}" "$bin/initdb" -D "$data" -U consensus -E UTF8 --locale=C --auth=trust >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  fi
  serve "$1" "$2"
  local psql=("${as_owner[@]}" "$bin/psql" -h "$sock" -p "$port" -U consensus -v ON_ERROR_STOP=1 -qtA)
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
  local guard
  guard=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kubernetes/overlays/cloudnativepg" && pwd)/audit-guard.sql
  for db in template1 consensus; do
    "${psql[@]}" -d "$db" >/dev/null <"$guard" || die "installing $guard in $db failed"
  done
}

# standby FAST PRIMARY_DIR: copy the running primary the first time, then
# serve the copy and wait until the primary sees it stream.
standby() {
  local fast=$1 pdir=$2
  local sdir=$dir sdata=$data ssock=$sock
  locate "$pdir"
  local psock=$sock
  answers || die "the primary in $data does not answer on $psock: start it first"
  if [[ ! -f $sdata/PG_VERSION ]]; then
    # A slot left by an earlier copy that failed halfway would make -C fail.
    sql postgres "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$standby_name' AND NOT active" >/dev/null
    "${as_owner[@]}" "$bin/pg_basebackup" -h "$psock" -p "$port" -U consensus -D "$sdata" -R -S "$standby_name" -C -X stream --checkpoint=fast \
      >"$sdir/basebackup.log" 2>&1 || { cat "$sdir/basebackup.log" >&2; die "pg_basebackup from $data failed"; }
    # Later lines win: the standby names itself to the primary, names no
    # synchronous standby of its own once promoted (the copied
    # postgresql.auto.conf may hold the primary's), and looks for WAL again
    # after a second, not five, when its primary is gone: a promotion
    # waits for that pause to end.
    "${as_owner[@]}" tee -a "$sdata/postgresql.auto.conf" >/dev/null <<CONF
primary_conninfo = 'host=$psock port=$port user=consensus application_name=$standby_name'
primary_slot_name = '$standby_name'
synchronous_standby_names = ''
wal_retrieve_retry_interval = '1s'
CONF
  fi
  dir=$sdir data=$sdata sock=$ssock
  serve "$fast" 1
  local i state=
  for ((i = 0; i < 600; i++)); do
    state=$(sock=$psock sql postgres "SELECT state FROM pg_stat_replication WHERE application_name = '$standby_name'" 2>/dev/null || true)
    [[ $state == streaming ]] && return
    sleep 0.1
  done
  die "the standby in $sdata does not stream from $psock after 60s (state '$state'; log: $sdir/server.log)"
}

case $cmd in
  url) locate "$dir"; service_url "$sock" "$port" ;;
  admin-url) locate "$dir"; echo "postgres:///consensus?host=$sock&port=$port&user=consensus&sslmode=disable" ;;
  stop)
    locate "$dir"
    if [[ -f $data/postmaster.pid ]]; then "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi ;;
  start)
    fast=0 primary=0
    for a in "$@"; do
      case $a in --fast) fast=1 ;; --primary) primary=1 ;; *) die "start: unknown option $a" ;; esac
    done
    locate "$dir"
    start "$fast" "$primary"
    service_url "$sock" "$port" ;;
  standby-start)
    [[ -n ${1:-} ]] || die "usage: $0 standby-start DIR PRIMARY_DIR [--fast]"
    pdir=$1; shift
    fast=0
    for a in "$@"; do
      case $a in --fast) fast=1 ;; *) die "standby-start: unknown option $a" ;; esac
    done
    locate "$dir"
    standby "$fast" "$pdir"
    service_url "$sock" "$port" ;;
  ha-start)
    [[ -n ${1:-} ]] || die "usage: $0 ha-start PRIMARY_DIR STANDBY_DIR [--fast] [--async]"
    sdir_arg=$1; shift
    fast=0 async=0
    for a in "$@"; do
      case $a in --fast) fast=1 ;; --async) async=1 ;; *) die "ha-start: unknown option $a" ;; esac
    done
    pdir_arg=$dir
    locate "$pdir_arg"
    start "$fast" 1
    psock=$sock
    locate "$sdir_arg"
    standby "$fast" "$pdir_arg"
    ssock=$sock
    locate "$pdir_arg"
    want=$standby_name
    [[ $async == 1 ]] && want=
    sql postgres "ALTER SYSTEM SET synchronous_standby_names = '$want'" >/dev/null
    sql postgres "SELECT pg_reload_conf()" >/dev/null
    # The reload is asynchronous: wait until the primary reports the
    # standby as it was asked to.
    expect=sync; [[ $async == 1 ]] && expect=async
    for ((i = 0; i < 100; i++)); do
      st=$(sql postgres "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$standby_name'")
      [[ $st == "$expect" ]] && break
      sleep 0.1
    done
    [[ $st == "$expect" ]] || die "the standby's sync_state is '$st', not $expect"
    service_url "$psock,$ssock" "$port,$port" "&target_session_attrs=read-write" ;;
  promote)
    locate "$dir"
    "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -w -t 60 promote >/dev/null || die "pg_ctl promote failed (log: $dir/server.log)"
    for ((i = 0; i < 600; i++)); do
      [[ $(sql postgres "SELECT pg_is_in_recovery()" 2>/dev/null) == f ]] && exit 0
      sleep 0.1
    done
    die "the server in $data still recovers 60s after its promotion (log: $dir/server.log)" ;;
  ha-url)

    socks= ports=
    for d in "$dir" "$@"; do
      locate "$d"
      socks=${socks:+$socks,}$sock
      ports=${ports:+$ports,}$port
    done
    service_url "$socks" "$ports" "&target_session_attrs=read-write" ;;
  *) die "unknown command $cmd" ;;
esac

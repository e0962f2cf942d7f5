#!/usr/bin/env bash
# Start a throw-away PostgreSQL server for the scale-out tests (tests/reliability, marker
# "postgres") and export WM_TEST_POSTGRES_URL. Sourced by .ci/run; usable by hand too:
#
#     source .ci/postgres.sh && pytest -m postgres
#
# What it does:
#   1. Finds Debian's PostgreSQL binaries (/usr/lib/postgresql/<ver>/bin); when absent and we are
#      root, installs them: apt-get update; apt-get install -y postgresql.
#   2. initdb in a fresh temp dir (as the "postgres" user when we are root; initdb refuses root),
#      trust authentication (the server is reachable from this machine only).
#   3. Starts it listening on 127.0.0.1 only (a free port) and on a unix socket in the temp dir.
#   4. Creates the database "wm_test" and exports
#        WM_TEST_POSTGRES_URL=postgresql://postgres@/wm_test?host=<tempdir>&port=<port>
#      i.e. the tests connect over the UNIX SOCKET. The test suite runs with pytest-socket's
#      --disable-socket --allow-unix-socket, so a unix-socket connection needs no exemption
#      (and libpq is never routed through Python's socket module anyway).
#   5. Stops the server and removes the temp dir when the sourcing shell exits.
#
# Never fatal: on any failure it prints why and returns 1 (the caller goes on; the postgres
# tests then skip, naming WM_TEST_POSTGRES_URL as the reason). Written for `source`, so it
# uses `return`, checks every step itself (errexit does not apply inside `source ... || ...`),
# and keeps its helpers prefixed with _wm_pg.

_wm_pg_log() { echo "== postgres: $*"; }

_wm_pg_bindir() {
  # The highest installed major version that has initdb and pg_ctl; empty when none.
  local dir best=""
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
    [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && best="$dir"
  done
  echo "$best"
}

_wm_pg_install() {
  if [ "$(id -u)" != "0" ]; then
    _wm_pg_log "PostgreSQL binaries missing and not root: cannot apt-get install"
    return 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _wm_pg_log "PostgreSQL binaries missing and no apt-get on this machine"
    return 1
  fi
  _wm_pg_log "installing Debian package postgresql"
  # Do not let the package's maintainer scripts start the default cluster: we run our own.
  local policy_created=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    policy_created=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || rc=$?
  if [ "$rc" = "0" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql \
      >/dev/null 2>&1 || rc=$?
  fi
  [ -n "$policy_created" ] && rm -f /usr/sbin/policy-rc.d
  if [ "$rc" != "0" ]; then
    _wm_pg_log "apt-get failed (exit $rc)"
    return 1
  fi
  return 0
}

_wm_pg_free_port() {
  local py
  py="$(command -v python3 || command -v python || true)"
  if [ -z "$py" ]; then
    echo 55432
    return 0
  fi
  "$py" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

_wm_pg_as_owner() {
  # Run a command as the cluster owner: "postgres" when we are root, else ourselves.
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

_wm_pg_stop() {
  if [ -n "${_WM_PG_DIR:-}" ] && [ -d "$_WM_PG_DIR" ]; then
    _wm_pg_as_owner "$_WM_PG_BIN/pg_ctl" -D "$_WM_PG_DIR/data" -m fast -w stop >/dev/null 2>&1
    rm -rf "$_WM_PG_DIR"
  fi
}

_wm_pg_start() {
  local bindir
  bindir="$(_wm_pg_bindir)"
  if [ -z "$bindir" ]; then
    _wm_pg_install || return 1
    bindir="$(_wm_pg_bindir)"
    if [ -z "$bindir" ]; then
      _wm_pg_log "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
      return 1
    fi
  fi
  local dir port
  dir="$(mktemp -d /tmp/wmpg.XXXXXX)" || return 1
  if [ "$(id -u)" = "0" ]; then
    if ! id postgres >/dev/null 2>&1; then
      _wm_pg_log "no 'postgres' user to run the server as (initdb refuses root)"
      rm -rf "$dir"
      return 1
    fi
    chown postgres "$dir" || { rm -rf "$dir"; return 1; }
  fi
  chmod 755 "$dir"
  port="$(_wm_pg_free_port)"
  _WM_PG_DIR="$dir"
  _WM_PG_BIN="$bindir"
  if ! _wm_pg_as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
      --locale=C.UTF-8 >"$dir/initdb.log" 2>&1; then
    # Older initdb versions without C.UTF-8: fall back to the C locale.
    if ! _wm_pg_as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
        --locale=C >"$dir/initdb.log" 2>&1; then
      _wm_pg_log "initdb failed: $(tail -n 3 "$dir/initdb.log" 2>/dev/null)"
      rm -rf "$dir"
      unset _WM_PG_DIR
      return 1
    fi
  fi
  if ! _wm_pg_as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c max_connections=200" \
      start >/dev/null 2>&1; then
    _wm_pg_log "server did not start: $(tail -n 3 "$dir/server.log" 2>/dev/null)"
    rm -rf "$dir"
    unset _WM_PG_DIR
    return 1
  fi
  trap _wm_pg_stop EXIT
  if ! _wm_pg_as_owner "$bindir/createdb" -h "$dir" -p "$port" -U postgres wm_test \
      >/dev/null 2>&1; then
    _wm_pg_log "createdb failed"
    _wm_pg_stop
    return 1
  fi
  export WM_TEST_POSTGRES_URL="postgresql://postgres@/wm_test?host=$dir&port=$port"
  _wm_pg_log "$("$bindir/postgres" --version) on 127.0.0.1:$port and unix socket $dir"
  _wm_pg_log "WM_TEST_POSTGRES_URL=$WM_TEST_POSTGRES_URL"
  return 0
}

_wm_pg_start

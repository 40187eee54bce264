#!/bin/sh
# Puts the rankd agent on this node: program files under /opt/rankd, its config in
# /etc/rankd/agent.json, state dirs, and the systemd unit, enabled and started.
#
#   deploy/install.sh --controller https://10.0.0.1:7480 --ca-hash sha256:HEX
#                     [--token-file /etc/rankd/token] [--token TOKEN | --token-stdin]
#                     [--name NODE] [--label k=v]…
#                     [--address IP] [--allow-root]
#                     [--from-dir DIR | --from-tarball FILE] [--prefix /opt/rankd]
#                     [--root DIR] [--dry-run] [--no-start]
#
# --from-dir DIR      a built rankd checkout (default: the one holding this script);
#                     its production dependencies are copied, never its dev tools.
# --from-tarball FILE an `npm pack` tarball, installed with npm into the prefix.
# --root DIR          install into DIR as if it were / (also DESTDIR=DIR); nothing is
#                     started, and the unit is enabled by its symlink only.
# --dry-run           print each step and change nothing.
#
# Enrollment: `rankd join-command` on the controller prints the join token and the CA hash.
# The token (single-use unless minted with --uses N) goes to --token-file, mode 0600 (give it
# with --token-stdin: --token puts it in this script's argv, which ps shows); the
# agent reads it only until it has enrolled, then lives on its node certificate in
# /var/lib/rankd/agent (mode 0600) and renews it; the token file may then be deleted.
#
# On Kubernetes nodes, deploy/kubernetes/ runs the agent as a DaemonSet instead (docs/kubernetes.md).
set -eu

PREFIX=/opt/rankd
ROOT=${DESTDIR:-/}
CONTROLLER=
TOKEN_FILE=/etc/rankd/token
CA_HASH=
TOKEN=
TOKEN_STDIN=0
NAME=
ADDRESS=
ALLOW_ROOT=0
LABELS=
FROM_DIR=
FROM_TARBALL=
DRY_RUN=0
START=1
SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)

die() { echo "install.sh: $*" >&2; exit 64; }
note() { echo "install.sh: $*" >&2; }
# Every change goes through run, so --dry-run shows exactly what a real run does.
run() {
  echo "+ $*"
  [ "$DRY_RUN" = 1 ] || "$@"
}
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
  case $1 in
    --controller) need_arg "$@"; CONTROLLER=$2; shift 2 ;;
    --token-file) need_arg "$@"; TOKEN_FILE=$2; shift 2 ;;
    --ca-hash) need_arg "$@"; CA_HASH=$2; shift 2 ;;
    --token) need_arg "$@"; TOKEN=$2; shift 2 ;;
    --token-stdin) TOKEN_STDIN=1; shift ;;
    --name) need_arg "$@"; NAME=$2; shift 2 ;;
    --label) need_arg "$@"
      case $2 in *=*) ;; *) die "--label takes key=value, not \"$2\"" ;; esac
      LABELS="$LABELS$2
"; shift 2 ;;
    --address) need_arg "$@"; ADDRESS=$2; shift 2 ;;
    --allow-root) ALLOW_ROOT=1; shift ;;
    --from-dir) need_arg "$@"; FROM_DIR=$2; shift 2 ;;
    --from-tarball) need_arg "$@"; FROM_TARBALL=$2; shift 2 ;;
    --prefix) need_arg "$@"; PREFIX=$2; shift 2 ;;
    --root) need_arg "$@"; ROOT=$2; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --no-start) START=0; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
  esac
done

[ -n "$CONTROLLER" ] || die "--controller URL is required"
case $CONTROLLER in https://*) ;; *) die "--controller must be an https:// URL (the controller speaks TLS only), not \"$CONTROLLER\"" ;; esac
case $CA_HASH in '') ;; sha256:*) ;; *) die "--ca-hash must look like sha256:HEX, as rankd join-command prints it" ;; esac
case $TOKEN_FILE in /*) ;; *) die "--token-file must be an absolute path" ;; esac
case $PREFIX in /*) ;; *) die "--prefix must be an absolute path" ;; esac
[ -z "$FROM_DIR" ] || [ -z "$FROM_TARBALL" ] || die "--from-dir and --from-tarball exclude each other"
[ -n "$TOKEN" ] && [ "$TOKEN_STDIN" = 1 ] && die "--token and --token-stdin exclude each other"
# argv is readable by every user of this node (ps) for as long as this script runs
[ -n "$TOKEN" ] && note "warning: --token puts the join token in this script's command line, which ps shows to every user; prefer --token-stdin"
if [ "$TOKEN_STDIN" = 1 ]; then IFS= read -r TOKEN || [ -n "$TOKEN" ] || die "no token on stdin"; fi

NODE=$(command -v node || true)
[ -n "$NODE" ] || die "node (>= 20) is not on PATH"
NODE_MAJOR=$("$NODE" -p 'process.versions.node.split(".")[0]')
[ "$NODE_MAJOR" -ge 20 ] || die "node $("$NODE" --version) is too old: rankd needs >= 20"

ROOT=${ROOT%/}
DEST=$ROOT$PREFIX
UNIT_DIR=$ROOT/etc/systemd/system
ETC=$ROOT/etc/rankd

# ── program files ───────────────────────────────────────────────────────────────
install_from_dir() {
  src=$(cd "$1" && pwd)
  [ -f "$src/packages/cli/dist/main.js" ] || die "$src is not a built rankd checkout (no packages/cli/dist/main.js; run npm ci)"
  # the rank supervisor is built with the checkout (npm ci fails without a C compiler); an
  # agent without it would refuse every rank, so such a tree is not installed
  [ -x "$src/packages/agent/dist/native/rank-supervisor" ] ||
    die "$src has no rank supervisor (packages/agent/dist/native/rank-supervisor): install a C compiler (apt-get install gcc) and run npm run build there"
  app=$DEST/app
  run mkdir -p "$app/packages"
  run cp "$src/package.json" "$app/"
  for pkg in "$src"/packages/*/; do
    name=$(basename "$pkg")
    run mkdir -p "$app/packages/$name"
    run cp "$pkg/package.json" "$app/packages/$name/"
    if [ -d "$pkg/dist" ]; then run cp -R "$pkg/dist" "$app/packages/$name/"; fi
  done
  if ! command -v npm >/dev/null; then
    note "npm is not on PATH: copying all of node_modules, dev tools included"
    run cp -PR "$src/node_modules" "$app/"
  else
  # Production dependencies only, as npm resolves them (workspaces included, as symlinks).
  # A path inside one already copied is skipped: cp -R took it along.
  last=
  (cd "$src" && npm ls --omit=dev --all --parseable 2>/dev/null) | sed "s|^$src/||" | grep '^node_modules/' | sort -u |
    while IFS= read -r rel; do
      case $rel in "$last"/*) [ -n "$last" ] && continue ;; esac
      last=$rel
      run mkdir -p "$app/$(dirname "$rel")"
      run cp -PR "$src/$rel" "$app/$(dirname "$rel")/"
    done
  fi
  run mkdir -p "$DEST/bin"
  wrapper="#!/bin/sh
exec $NODE $PREFIX/app/packages/cli/dist/main.js \"\$@\""
  echo "+ write $DEST/bin/rankd"
  if [ "$DRY_RUN" = 0 ]; then
    printf '%s\n' "$wrapper" > "$DEST/bin/rankd"
    chmod 0755 "$DEST/bin/rankd"
  fi
}

install_from_tarball() {
  [ -f "$1" ] || die "no tarball at $1"
  command -v npm >/dev/null || die "npm is needed to install from a tarball"
  # npm -g with a prefix puts the package under lib/node_modules and its bin under bin/.
  run npm install --global --omit=dev --no-audit --no-fund --prefix "$DEST" "$1"
  [ "$DRY_RUN" = 1 ] || [ -x "$DEST/bin/rankd" ] || die "the tarball installed no bin/rankd"
}

if [ -n "$FROM_TARBALL" ]; then
  install_from_tarball "$FROM_TARBALL"
else
  install_from_dir "${FROM_DIR:-$SCRIPT_DIR/..}"
fi

# ── config, token, state ───────────────────────────────────────────────────────
run mkdir -p "$ETC"
run chmod 0755 "$ETC"
# JSON is written by node, which escapes every value; the shell only passes them along.
CONFIG=$(CONTROLLER=$CONTROLLER TOKEN_FILE=$TOKEN_FILE CA_HASH=$CA_HASH NAME=$NAME ADDRESS=$ADDRESS ALLOW_ROOT=$ALLOW_ROOT LABELS=$LABELS "$NODE" -e '
  const e = process.env;
  const config = { controller: e.CONTROLLER, tokenFile: e.TOKEN_FILE, spoolDir: "/var/lib/rankd/spool", stateDir: "/var/lib/rankd/agent" };
  if (e.CA_HASH) config.caHash = e.CA_HASH;
  if (e.NAME) config.name = e.NAME;
  if (e.ADDRESS) config.address = e.ADDRESS;
  if (e.ALLOW_ROOT === "1") config.allowRoot = true;
  const labels = {};
  for (const pair of e.LABELS.split("\n").filter(Boolean)) {
    const eq = pair.indexOf("=");
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  if (Object.keys(labels).length > 0) config.labels = labels;
  process.stdout.write(JSON.stringify(config, null, 2) + "\n");
')
echo "+ write $ETC/agent.json"
if [ "$DRY_RUN" = 1 ]; then
  printf '%s\n' "$CONFIG"
else
  printf '%s\n' "$CONFIG" > "$ETC/agent.json.tmp"
  chmod 0644 "$ETC/agent.json.tmp"
  mv "$ETC/agent.json.tmp" "$ETC/agent.json"
fi

if [ -n "$TOKEN" ]; then
  run mkdir -p "$ROOT$(dirname "$TOKEN_FILE")"
  echo "+ write $ROOT$TOKEN_FILE (mode 0600)"
  if [ "$DRY_RUN" = 0 ]; then
    (umask 077 && printf '%s\n' "$TOKEN" > "$ROOT$TOKEN_FILE.tmp")
    mv "$ROOT$TOKEN_FILE.tmp" "$ROOT$TOKEN_FILE"
  fi
elif [ ! -f "$ROOT$TOKEN_FILE" ]; then
  note "warning: $ROOT$TOKEN_FILE does not exist; the agent cannot enroll until the join token is there (or it has a certificate in /var/lib/rankd/agent)"
fi
[ -n "$CA_HASH" ] || note "warning: no --ca-hash: the agent cannot enroll until \"caHash\" is set in $ETC/agent.json (rankd join-command prints it)"

run mkdir -p "$ROOT/var/lib/rankd/spool"
run chmod 0750 "$ROOT/var/lib/rankd"

# ── systemd ──────────────────────────────────────────────────────────────────────
run mkdir -p "$UNIT_DIR"
echo "+ install $UNIT_DIR/rankd-agent.service"
if [ "$DRY_RUN" = 0 ]; then
  # The unit names /opt/rankd; a different prefix is written into the copy.
  sed "s|/opt/rankd/|$PREFIX/|g" "$SCRIPT_DIR/rankd-agent.service" > "$UNIT_DIR/rankd-agent.service"
  chmod 0644 "$UNIT_DIR/rankd-agent.service"
fi

systemd_running() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null; }

if [ "$ROOT" = "" ] && [ "$START" = 1 ] && systemd_running; then
  run systemctl daemon-reload
  run systemctl enable --now rankd-agent.service
else
  # What `systemctl enable` does, done by hand: works in a --root tree and without systemd.
  run mkdir -p "$UNIT_DIR/multi-user.target.wants"
  run ln -sfn /etc/systemd/system/rankd-agent.service "$UNIT_DIR/multi-user.target.wants/rankd-agent.service"
  if [ "$ROOT" = "" ] && [ "$START" = 1 ]; then
    note "systemd is not running here: the agent is enabled for the next boot, not started"
  fi
fi
echo "install.sh: rankd agent installed in $DEST (controller $CONTROLLER)"

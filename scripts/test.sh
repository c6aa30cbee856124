#!/usr/bin/env bash
# The whole test suite, set-up included: what CI runs and what a newcomer runs on a fresh
# Debian machine (as root). Extra arguments go to pytest, e.g. `scripts/test.sh -m "not docker"`.
#
#  1. a virtualenv (.venv) with cudaenv and its test dependencies;
#  2. a Docker engine: a reachable one is used as is; otherwise Debian's docker.io is installed
#     and dockerd started detached (it keeps running after the suite, like any system daemon);
#  3. debootstrap, docker-registry, git, tmux, shellcheck, slurm-wlm and munge, which the suite's
#     fixtures and tests use (the one-node Slurm cluster is started and stopped by a fixture);
#  4. stand-in base images (a debootstrapped Debian with python3, and an Ubuntu 18.04 for the
#     18.04 tags, `docker import`ed), cached by tag: a second run reuses them;
#  5. pytest. The local registry is started and stopped by the suite's fixtures.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${CUDAENV_VENV:-$ROOT/.venv}
LOGS=${CUDAENV_TEST_LOGS:-$ROOT/.test-logs}
DEBIAN_MIRROR=${CUDAENV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Bump the suffix when the recipe below changes, so cached stand-ins are rebuilt.
STANDIN_IMAGE=${CUDAENV_STANDIN_IMAGE:-cudaenv-standin/bookworm-python:1}
# nvidia/cuda's Ubuntu 18.04 tags stand in as a debootstrapped bionic: its archive decides what those
# images can install (dumb-init, python3.7: matrix/images.toml [[os]]), so the stand-in must be bionic
BIONIC_STANDIN_IMAGE=${CUDAENV_STANDIN_BIONIC:-cudaenv-standin/bionic:1}
UBUNTU_MIRROR=${CUDAENV_UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
mkdir -p "$LOGS"

say() { printf '==> %s\n' "$*"; }
die() { printf 'scripts/test.sh: error: %s\n' "$*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

APT_UPDATED=
apt_install() {
    is_root || die "need root to install $* (or install it yourself and re-run)"
    command -v apt-get >/dev/null || die "no apt-get here: install $* by hand and re-run"
    if [ -z "$APT_UPDATED" ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    say "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >"$LOGS/apt.log" 2>&1 \
        || { tail -20 "$LOGS/apt.log" >&2; die "apt-get install $* failed (log: $LOGS/apt.log)"; }
}

ensure_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtualenv $VENV"
        python3 -m venv --clear "$VENV" >/dev/null 2>&1 || { say "no ensurepip here: installing python3-venv"; apt_install python3-venv; python3 -m venv --clear "$VENV"; }
    fi
    say "installing cudaenv[test] into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[test]"
}

docker_answers() {
    "$VENV/bin/python" - <<'PY' >/dev/null 2>&1
import docker
docker.from_env(timeout=5).ping()
PY
}

ensure_docker() {
    if docker_answers; then
        say "Docker engine reachable"
        return
    fi
    if [ -n "${DOCKER_HOST:-}" ]; then
        die "DOCKER_HOST=$DOCKER_HOST does not answer; fix it or unset it to let this script start dockerd"
    fi
    command -v dockerd >/dev/null || apt_install docker.io
    is_root || die "no Docker engine answers and only root can start dockerd"
    say "starting dockerd (log: $LOGS/dockerd.log)"
    # Fully detached: own session, no stdin, output to a file, so CI never waits on it.
    setsid dockerd >"$LOGS/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 1 60); do
        docker_answers && { say "dockerd is up"; return; }
        sleep 1
    done
    tail -20 "$LOGS/dockerd.log" >&2
    die "dockerd did not answer within 60 s (log: $LOGS/dockerd.log)"
}

ensure_tools() {
    local missing=()
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
    command -v docker-registry >/dev/null || missing+=(docker-registry)
    command -v docker >/dev/null || missing+=(docker.io)
    command -v git >/dev/null || missing+=(git)  # uv fetches git+https requirements with it (class-6 tests)
    command -v tmux >/dev/null || missing+=(tmux)  # `cudaenv top` is tested in a real terminal
    command -v shellcheck >/dev/null || missing+=(shellcheck)  # every generated sbatch script is linted
    command -v slurmctld >/dev/null || missing+=(slurm-wlm)  # a one-node cluster runs exported jobs
    command -v munged >/dev/null || missing+=(munge)
    if [ ${#missing[@]} -gt 0 ]; then
        apt_install "${missing[@]}"
    fi
}

# debootstrap_standin TAG LOG MESSAGE SOURCES DEBOOTSTRAP_ARGS...: a minbase root file system made by
# debootstrap (the argument ROOTFS stands for its folder), SOURCES (when not empty) written as its
# apt sources, then `docker import`ed as TAG with MESSAGE; an image already tagged TAG is reused.
debootstrap_standin() {
    local tag=$1 log=$LOGS/$2 message=$3 sources=$4
    shift 4
    if docker image inspect "$tag" >/dev/null 2>&1; then
        say "reusing stand-in base image $tag"
        return
    fi
    local rootfs started arg args=()
    started=$(date +%s)
    rootfs=$(mktemp -d /tmp/cudaenv-standin.XXXXXX)
    for arg in "$@"; do
        if [ "$arg" = ROOTFS ]; then args+=("$rootfs"); else args+=("$arg"); fi
    done
    say "debootstrapping the stand-in base image $tag (once; cached by tag)"
    debootstrap --variant=minbase "${args[@]}" >"$log" 2>&1 \
        || { tail -20 "$log" >&2; rm -rf "$rootfs"; die "debootstrap failed (log: $log)"; }
    if [ -n "$sources" ]; then
        printf '%s' "$sources" >"$rootfs/etc/apt/sources.list"
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        --message "cudaenv test stand-in: $message" \
        - "$tag" >/dev/null
    rm -rf "$rootfs"
    say "stand-in base image ready in $(( $(date +%s) - started )) s"
}

ensure_standin_image() {
    debootstrap_standin "$STANDIN_IMAGE" debootstrap.log "Debian bookworm minbase + python3" "" \
        --include=python3,ca-certificates bookworm ROOTFS "$DEBIAN_MIRROR"
}

ensure_bionic_standin() {
    # Debian carries no Ubuntu keyring: debootstrap warns and checks each package against the
    # Packages index only; the rootfs brings ubuntu-keyring, so apt inside the images verifies.
    # Its apt sources are those of Ubuntu's own images: the release, its updates and security pockets.
    local sources
    sources=$(printf 'deb %s %s main universe\n' "$UBUNTU_MIRROR" bionic "$UBUNTU_MIRROR" bionic-updates \
        "$UBUNTU_MIRROR" bionic-security)
    debootstrap_standin "$BIONIC_STANDIN_IMAGE" debootstrap-bionic.log \
        "Ubuntu 18.04 minbase (no Python, no init: the images install them)" "$sources"$'\n' \
        --components=main,universe --include=ca-certificates bionic ROOTFS "$UBUNTU_MIRROR"
}

# The Dev Containers reference CLI (npm; needs Node >= 20), for the devcontainer export tests.
DEVCONTAINER_CLI_VERSION=0.89.0
ensure_devcontainer_cli() {
    local prefix="$ROOT/.test-tools/devcontainers"
    if [ -x "$prefix/node_modules/.bin/devcontainer" ]; then
        return
    fi
    command -v npm >/dev/null || apt_install nodejs npm
    local major
    major=$(node -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0)
    if [ "$major" -lt 20 ]; then
        say "Node $(node --version 2>/dev/null || echo missing) is older than the Dev Containers CLI needs (20): its tests will fail"
        return
    fi
    say "installing @devcontainers/cli@$DEVCONTAINER_CLI_VERSION (once; into .test-tools/)"
    mkdir -p "$prefix"
    npm install --silent --no-audit --no-fund --prefix "$prefix" "@devcontainers/cli@$DEVCONTAINER_CLI_VERSION" \
        >"$LOGS/npm.log" 2>&1 || { tail -20 "$LOGS/npm.log" >&2; die "npm install @devcontainers/cli failed (log: $LOGS/npm.log)"; }
}

main() {
    local started=$SECONDS
    ensure_venv
    ensure_tools
    ensure_docker
    ensure_standin_image
    ensure_bionic_standin
    ensure_devcontainer_cli
    export CUDAENV_STANDIN_IMAGE="$STANDIN_IMAGE" CUDAENV_STANDIN_BIONIC="$BIONIC_STANDIN_IMAGE"
    say "set-up took $(( SECONDS - started )) s; running pytest"
    "$VENV/bin/python" -m pytest "$@"
}

main "$@"

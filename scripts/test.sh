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
#  5. Podman (Debian's 4.3, with runc), rootful and rootless: a test user with subordinate IDs
#     (CUDAENV_TEST_ROOTLESS_USER, default cudaenv-rootless) whose own Podman the rootless tests
#     drive through runuser; the stand-in base image copied into both Podman stores;
#  6. rootless Docker: the same user's own dockerd under rootlesskit (Debian's rootlesskit and
#     docker.io's dockerd-rootless.sh), started detached and left running like dockerd, with the
#     stand-in in its store;
#  7. pytest. The local registry is started and stopped by the suite's fixtures.
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
# Grace/Arm targets: an arm64 Debian + python3 stand-in for python:X.Y-slim, built and run through
# qemu-user-static (binfmt_misc); the uv binary of the aarch64 uv wheel stands in for the uv image
ARM64_STANDIN_IMAGE=${CUDAENV_STANDIN_ARM64:-cudaenv-standin/bookworm-python-arm64:1}
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
    chmod 755 "$rootfs"  # the image's `/` (mktemp makes it 0700, which only root in the container may enter)
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

# aarch64 binaries run here through qemu-user-static registered with binfmt_misc (the F flag makes
# the kernel open the interpreter once, so it works inside containers too). Where that cannot be set
# up (not root, or inside a container that may not mount binfmt_misc) the arm64 set-up is skipped
# with a note: the arm64 image tests then fail under CI=true and skip elsewhere, as missing tools do.
ARM64_READY=
ensure_binfmt() {
    if [ "$(uname -m)" = aarch64 ]; then
        ARM64_READY=1
        return
    fi
    if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
        if ! is_root || ! mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null; then
            say "binfmt_misc is not available here (not root, or a container): skipping the arm64 set-up"
            return
        fi
    fi
    if ! command -v qemu-aarch64-static >/dev/null || ! command -v update-binfmts >/dev/null; then
        apt_install qemu-user-static binfmt-support
    fi
    if ! head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null | grep -qx enabled; then
        if ! is_root || ! update-binfmts --enable qemu-aarch64 >"$LOGS/binfmt.log" 2>&1; then
            say "could not register qemu-aarch64 with binfmt_misc (log: $LOGS/binfmt.log): skipping the arm64 set-up"
            return
        fi
    fi
    ARM64_READY=1
    say "aarch64 emulation: $(head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || echo native), flags $(sed -n 's/^flags: //p' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)"
}

# The arm64 stand-in: a debootstrapped arm64 bookworm (its second stage runs under qemu), given the
# linux/arm64 platform by a BuildKit build FROM scratch (`docker import` records the daemon's own).
ensure_arm64_standin() {
    [ -n "$ARM64_READY" ] || return 0
    if docker image inspect "$ARM64_STANDIN_IMAGE" >/dev/null 2>&1; then
        say "reusing stand-in base image $ARM64_STANDIN_IMAGE"
        return
    fi
    local rootfs context builder started
    started=$(date +%s)
    rootfs=$(mktemp -d /tmp/cudaenv-standin-arm64.XXXXXX)
    say "debootstrapping the arm64 stand-in $ARM64_STANDIN_IMAGE (once; cached by tag)"
    debootstrap --variant=minbase --arch=arm64 --include=python3,ca-certificates bookworm "$rootfs" "$DEBIAN_MIRROR" \
        >"$LOGS/debootstrap-arm64.log" 2>&1 \
        || { tail -20 "$LOGS/debootstrap-arm64.log" >&2; rm -rf "$rootfs"; die "arm64 debootstrap failed (log: $LOGS/debootstrap-arm64.log)"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    context=$(mktemp -d /tmp/cudaenv-standin-arm64-ctx.XXXXXX)
    tar -C "$rootfs" -cf "$context/rootfs.tar" .
    rm -rf "$rootfs"
    printf 'FROM scratch\nADD rootfs.tar /\nENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8\nCMD ["/bin/bash"]\n' \
        >"$context/Dockerfile"
    # the docker CLI that reaches BuildKit, found as cudaenv finds it (buildx, or a CLI with it built in)
    builder=$("$VENV/bin/python" -c 'from cudaenv.engine.builders import find_cli_builder as f; b = f(); print(b.cli, b.mode) if b else None')
    case "$builder" in
        *" buildx") DOCKER_BUILDKIT=1 ${builder% buildx} buildx build --load --platform linux/arm64 -t "$ARM64_STANDIN_IMAGE" "$context" >"$LOGS/standin-arm64.log" 2>&1 ;;
        *" buildkit") DOCKER_BUILDKIT=1 ${builder% buildkit} build --platform linux/arm64 -t "$ARM64_STANDIN_IMAGE" "$context" >"$LOGS/standin-arm64.log" 2>&1 ;;
        *) false ;;
    esac || { tail -20 "$LOGS/standin-arm64.log" >&2 2>/dev/null; rm -rf "$context"; die "could not build the arm64 stand-in (no BuildKit builder?)"; }
    rm -rf "$context"
    say "arm64 stand-in ready in $(( $(date +%s) - started )) s"
}

# uv's own aarch64 wheel (the version cudaenv's images use), whose binary stands in for the uv image
ensure_arm64_uv() {
    [ -n "$ARM64_READY" ] || return 0
    local version directory
    version=$("$VENV/bin/python" -c 'from cudaenv.images.render import uv_version; print(uv_version())')
    directory="$ROOT/.test-tools/uv-aarch64/$version"
    if [ -z "$(find "$directory" -name 'uv-*.whl' 2>/dev/null | head -1)" ]; then
        say "downloading uv $version's aarch64 wheel (once; into .test-tools/)"
        "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
            --platform manylinux_2_17_aarch64 -d "$directory" "uv==$version" >"$LOGS/uv-aarch64.log" 2>&1 \
            || { tail -20 "$LOGS/uv-aarch64.log" >&2; die "could not download uv's aarch64 wheel"; }
    fi
    CUDAENV_TEST_UV_AARCH64=$(find "$directory" -name 'uv-*.whl' | head -1)
    export CUDAENV_TEST_UV_AARCH64
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

# Podman: Debian's podman with runc (docker.io brings runc; crun refuses this machine's hybrid
# cgroups), catatonit for --init, uidmap for rootless. Then the rootless user, and the stand-in in
# both stores: `docker export` | `podman import` (a flat copy: the debootstrapped stand-in's own `/`
# is 0700, which a rootless container user could not even enter).
ROOTLESS_USER=${CUDAENV_TEST_ROOTLESS_USER:-cudaenv-rootless}
as_rootless() {
    local home
    home=$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)
    (cd / && runuser -u "$ROOTLESS_USER" -- env -u XDG_RUNTIME_DIR HOME="$home" TMPDIR="$home/.cache/cudaenv/podman-tmp" "$@")
}
podman_import_standin() {  # TAG [rootless]
    local tag=$1 run=() container
    [ "${2:-}" = rootless ] && run=(as_rootless)
    if "${run[@]}" podman image exists "$tag" 2>/dev/null; then
        return
    fi
    say "copying $tag into ${2:-root}'s Podman store"
    container=$(docker create "$tag")
    docker export "$container" | "${run[@]}" podman import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
        --message "cudaenv test stand-in $tag" - "$tag" >/dev/null \
        || { docker rm -f "$container" >/dev/null; say "could not copy $tag into ${2:-root}'s Podman store"; return 1; }
    docker rm -f "$container" >/dev/null
}
ensure_podman() {
    local missing=()
    command -v runc >/dev/null || apt_install runc  # first, so podman's "crun | runc" takes it
    command -v podman >/dev/null || missing+=(podman)
    command -v newuidmap >/dev/null || missing+=(uidmap)
    command -v catatonit >/dev/null || missing+=(catatonit)
    if [ ${#missing[@]} -gt 0 ]; then
        apt_install "${missing[@]}"
    fi
    is_root || { say "not root: the rootless Podman user cannot be made here; its tests fail under CI"; return; }
    if ! getent passwd "$ROOTLESS_USER" >/dev/null; then
        say "creating the rootless Podman test user $ROOTLESS_USER"
        useradd --create-home --shell /bin/bash "$ROOTLESS_USER"
    fi
    if ! grep -q "^$ROOTLESS_USER:" /etc/subuid || ! grep -q "^$ROOTLESS_USER:" /etc/subgid; then
        usermod --add-subuids 300000-365535 --add-subgids 300000-365535 "$ROOTLESS_USER"
    fi
    as_rootless mkdir -p "$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)/.cache/cudaenv/podman-tmp"
    # Podman needs to create namespaces; inside an unprivileged container (the README's fresh-machine
    # test runs this script in one) it cannot: say so and go on, as the arm64 set-up does. The Podman
    # tests then fail under CI=true if they are selected, and skip otherwise.
    if ! podman info >/dev/null 2>&1; then
        say "Podman does not work here ($(podman info 2>&1 | tail -1)); the Podman tests cannot run"
        return
    fi
    if ! (podman_import_standin "$STANDIN_IMAGE" && podman_import_standin "$STANDIN_IMAGE" rootless); then
        say "Podman cannot import images here (an unprivileged container?); the Podman tests cannot run"
        return
    fi
    say "Podman $(podman version --format '{{.Client.Version}}'): rootful runtime $(podman info --format '{{.Host.OCIRuntime.Name}}'), rootless storage $(as_rootless podman info --format '{{.Store.GraphDriverName}}')"
}

# Rootless Docker: the rootless test user's own dockerd, started by Docker's dockerd-rootless.sh
# under rootlesskit, fully detached (own session, no stdin, output to a log) and left running like
# root's dockerd; a second run reuses it. Its socket, data and rootlesskit state live under the
# user's ~/.cache/cudaenv/docker-rootless (XDG_RUNTIME_DIR points there, so rootless Podman, which
# would take /run/user/UID, is not disturbed). /dev/net/tun is denied on many CI machines, where
# rootlesskit's own networks (slirp4netns, vpnkit) cannot start: the daemon stays in the host's
# network namespace (--net=host), where its user may make no bridge and no iptables rules
# (--bridge=none --iptables=false); its containers get a loopback only, or the host's network with
# --network host. Stop it with: kill "$(cat ~cudaenv-rootless/.cache/cudaenv/docker-rootless/launcher.pid)".
ROOTLESS_DOCKER_STATE=
rootless_docker_answers() {
    docker --host "unix://$ROOTLESS_DOCKER_STATE/run/docker.sock" info --format '{{json .SecurityOptions}}' 2>/dev/null \
        | grep -q 'name=rootless'
}
ensure_rootless_docker() {
    is_root || { say "not root: the rootless Docker daemon cannot be started for $ROOTLESS_USER; its tests fail under CI"; return; }
    command -v rootlesskit >/dev/null || apt_install rootlesskit
    local script home run pidfile
    script=$(command -v dockerd-rootless.sh || echo /usr/share/docker.io/contrib/dockerd-rootless.sh)
    if [ ! -x "$script" ]; then
        say "no dockerd-rootless.sh (Debian's docker.io has it in /usr/share/docker.io/contrib, docker-ce in docker-ce-rootless-extras): skipping the rootless Docker set-up"
        return
    fi
    home=$(getent passwd "$ROOTLESS_USER" | cut -d: -f6)
    ROOTLESS_DOCKER_STATE=$home/.cache/cudaenv/docker-rootless
    run=$ROOTLESS_DOCKER_STATE/run
    pidfile=$ROOTLESS_DOCKER_STATE/launcher.pid
    export CUDAENV_TEST_ROOTLESS_DOCKER_HOST="unix://$run/docker.sock"
    if rootless_docker_answers; then
        say "rootless Docker of $ROOTLESS_USER reachable at $CUDAENV_TEST_ROOTLESS_DOCKER_HOST"
    else
        if ! { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }; then
            # nothing of ours runs: whatever a dead daemon left in its runtime directory goes
            rm -rf "$run"
            as_rootless mkdir -p "$run" "$ROOTLESS_DOCKER_STATE/data"
            chmod 700 "$run"
            say "starting rootless dockerd for $ROOTLESS_USER (log: $LOGS/dockerd-rootless.log)"
            # the subshell execs setsid, which execs runuser: the recorded pid is runuser's, and
            # runuser passes a SIGTERM on to rootlesskit, which takes dockerd down with it
            (cd / && exec setsid runuser -u "$ROOTLESS_USER" -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
                HOME="$home" LANG=C.UTF-8 XDG_RUNTIME_DIR="$run" DOCKERD_ROOTLESS_ROOTLESSKIT_NET=host \
                DOCKERD_ROOTLESS_ROOTLESSKIT_PORT_DRIVER=none "$script" --data-root="$ROOTLESS_DOCKER_STATE/data" \
                --iptables=false --bridge=none) >"$LOGS/dockerd-rootless.log" 2>&1 </dev/null &
            echo $! >"$pidfile"
        fi
        local _
        for _ in $(seq 1 60); do
            rootless_docker_answers && break
            kill -0 "$(cat "$pidfile")" 2>/dev/null || break  # it gave up (no user namespaces here?)
            sleep 1
        done
        if ! rootless_docker_answers; then
            # like the arm64 set-up: a machine (or container) that cannot run it is noted, not fatal;
            # the rootless Docker tests then fail under CI=true and skip elsewhere
            tail -5 "$LOGS/dockerd-rootless.log" >&2
            say "the rootless dockerd did not come up (log: $LOGS/dockerd-rootless.log): skipping the rootless Docker set-up"
            return
        fi
        say "rootless dockerd is up"
    fi
    if ! docker --host "$CUDAENV_TEST_ROOTLESS_DOCKER_HOST" image inspect "$STANDIN_IMAGE" >/dev/null 2>&1; then
        say "copying $STANDIN_IMAGE into $ROOTLESS_USER's rootless Docker store"
        local container
        container=$(docker create "$STANDIN_IMAGE")
        docker export "$container" | docker --host "$CUDAENV_TEST_ROOTLESS_DOCKER_HOST" import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
            --message "cudaenv test stand-in $STANDIN_IMAGE" - "$STANDIN_IMAGE" >/dev/null \
            || { docker rm -f "$container" >/dev/null; die "could not copy $STANDIN_IMAGE into the rootless Docker store"; }
        docker rm -f "$container" >/dev/null
    fi
}

main() {
    local started=$SECONDS
    ensure_venv
    ensure_tools
    ensure_docker
    ensure_standin_image
    ensure_podman
    ensure_rootless_docker
    ensure_bionic_standin
    ensure_binfmt
    ensure_arm64_standin
    ensure_arm64_uv
    ensure_devcontainer_cli
    export CUDAENV_STANDIN_IMAGE="$STANDIN_IMAGE" CUDAENV_STANDIN_BIONIC="$BIONIC_STANDIN_IMAGE" \
        CUDAENV_STANDIN_ARM64="$ARM64_STANDIN_IMAGE" CUDAENV_TEST_ROOTLESS_USER="$ROOTLESS_USER"
    say "set-up took $(( SECONDS - started )) s; running pytest"
    "$VENV/bin/python" -m pytest "$@"
}

main "$@"

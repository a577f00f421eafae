#!/usr/bin/env bash
# Set up everything hbl needs on a Debian/Ubuntu host, idempotently:
#   1. system packages (apt), only those missing;
#   2. a virtual environment in .venv with hbl installed (editable; builds the C core).
# Re-running it does nothing when nothing changed. Quiet unless it has work to do.
# --workloads also installs the applications of `hbl workloads capture` (PostgreSQL,
# MariaDB, sysbench, RocksDB's tools, Redis, nginx and wrk, rsync, the Linux source tree
# and what builds it, git, Squid, beanstalkd, restic, BorgBackup). Debian starts the redis-server, nginx, squid
# and beanstalkd services it installs where an init system runs; the recipes run their own.
set -euo pipefail
WORKLOADS=0
for arg in "$@"; do
    case "$arg" in
        --workloads) WORKLOADS=1 ;;
        *) echo "bootstrap: unknown option $arg (known: --workloads)" >&2; exit 2 ;;
    esac
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${HBL_VENV:-$ROOT/.venv}
PYTHON=${HBL_PYTHON:-python3}
say() { echo "bootstrap: $*" >&2; }

# ---- 1. system packages -------------------------------------------------------
need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v "$PYTHON" >/dev/null || need+=(python3)
if command -v "$PYTHON" >/dev/null; then
    "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
    "$PYTHON" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
        || need+=(python3-dev)
fi
# live capture (hbl trace): clang, libbpf and bpftool build the eBPF programs,
# bcc is the second loader (bpfcc-tools: biosnoop, the benchmark reference),
# fio makes test and benchmark I/O
# the VM testbed (hbl vm): QEMU, and what builds its images from Debian packages
# hbl report's test opens the page in Debian's chromium (headless, driven by playwright from the venv)
for p in clang llvm libbpf-dev bpftool python3-bpfcc bpfcc-tools fio \
         qemu-system-x86 qemu-utils debootstrap busybox-static kmod cpio e2fsprogs dmsetup chromium; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# hbl workloads: the applications whose block I/O the recipes capture (hbl/trace/workloads.py
# names the same list in its error when one is missing); always sqlite3 and the training
# captures' small ones (lmdb, rrdtool, kyotocabinet, dovecot's deliver): the test suite runs
# their recipes, so a fresh machine skips none of them
wl=(sqlite3 python3-lmdb python3-rrdtool python3-kyotocabinet dovecot-core)
((WORKLOADS)) && wl+=(postgresql mariadb-server sysbench rocksdb-tools linux-source xz-utils make bc flex bison
                     libelf-dev libssl-dev redis-server redis-tools nginx-light wrk rsync git squid beanstalkd
                     restic borgbackup)
for p in "${wl[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    [ -n "${HBL_APT_UPDATED:-}" ] || { apt-get update -qq; HBL_APT_UPDATED=1; }
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ((${#need[@]})); then
    if [ "$(id -u)" != 0 ]; then
        say "missing system packages: ${need[*]}; run as root or: sudo apt-get install ${need[*]}"
        exit 1
    fi
    say "installing system packages: ${need[*]}"
    apt_install "${need[@]}"
fi
# bcc compiles against kernel headers: the running kernel's if Debian has them,
# else Debian's generic ones linked in (tracepoint layouts come from tracefs,
# so a mismatch is harmless for hbl's programs)
kbuild=/lib/modules/$(uname -r)/build
if [ ! -e "$kbuild" ] && [ "$(id -u)" = 0 ]; then
    if ! apt_install "linux-headers-$(uname -r)" 2>/dev/null; then
        dpkg -s linux-headers-amd64 >/dev/null 2>&1 || { say "installing linux-headers-amd64 for bcc"; apt_install linux-headers-amd64; }
        hdr=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
        if [ -n "$hdr" ]; then
            mkdir -p "$(dirname "$kbuild")"
            ln -sfn "$hdr" "$kbuild"
            ln -sfn "${hdr%-amd64}-common" "$(dirname "$kbuild")/source"
            say "linked $hdr as the kernel headers for bcc ($kbuild)"
        fi
    fi
fi

# ---- 2. Python environment ----------------------------------------------------
stamp_of() {   # changes whenever the package definition or the C core changes
    (cd "$ROOT" && cat pyproject.toml setup.py ctypes_core/*.h ctypes_core/*.c ctypes_core/*.py \
        ctypes_core/policies/*.c ebpf/*.h ebpf/*.c hbl/capture/*.c hbl/capture/*.h hbl/capture/*.py \
        2>/dev/null; "$PYTHON" --version) | sha256sum | cut -d' ' -f1
}
stamp=$(stamp_of)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.hbl-stamp" 2>/dev/null)" = "$stamp" ] \
    && "$VENV/bin/python" -c 'import hbl._core' 2>/dev/null; then
    exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
    say "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
say "installing hbl and its Python dependencies into $VENV (builds the C core)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[dev,plot,bench,sweep,tune]" 2>&1 \
    | grep -v -E "^WARNING: Location .* is ignored" >&2 || true
"$VENV/bin/python" -c 'import hbl._core' || { say "the C core did not build; see the messages above"; exit 1; }
echo "$stamp" > "$VENV/.hbl-stamp"

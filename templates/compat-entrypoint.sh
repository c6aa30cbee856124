#!/bin/sh
# cudaenv: use NVIDIA's forward-compatibility libraries (cuda-compat) only on a host whose driver
# is older than they are. On a newer driver the host's own libcuda must be used: loading the older
# compat libcuda against a newer kernel module fails (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH).
compat_dir=${CUDAENV_COMPAT_DIR:-/usr/local/cuda/compat}
proc_version=${CUDAENV_PROC_VERSION:-/proc/driver/nvidia/version}
compat=$(ls "$compat_dir"/libcuda.so.*.* 2>/dev/null | head -n 1)
if [ -n "$compat" ] && [ -r "$proc_version" ]; then
    # the first dotted number on the NVRM line: 535.183.06 (both the proprietary and the open module)
    host=$(grep '^NVRM version:' "$proc_version" | grep -o '[0-9][0-9]*\.[0-9][0-9.]*' | head -n 1)
    mine=${compat##*libcuda.so.}
    if [ -n "$host" ] && [ "$host" != "$mine" ] \
        && [ "$(printf '%s\n%s\n' "$host" "$mine" | sort -V | head -n 1)" = "$host" ]; then
        export LD_LIBRARY_PATH="$compat_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi
exec "$@"

"""cudaenv: what one uv install changed in /opt/venv, on the build machine of a cross build.

The image is for another CPU than the machine that builds it, whose RUN steps run emulated. Its
wheels only need unpacking, so uv runs on the build machine instead (a stage FROM the same OS for
$BUILDPLATFORM, with a Python of the same version), into a venv at the image's own path:

    cudaenv-venv-delta before [TARGET_VENV]   the image's installed distributions (their *.dist-info,
                                              enough for uv to see them) copied in; a snapshot taken
    uv pip install --python-platform ...      the target's wheels, bytecode compiled natively
    cudaenv-venv-delta after ARCH             what changed, under /tmp/cudaenv-wheels/venv (COPY'd
                                              into the image's /opt/venv), the distributions uv
                                              replaced in /tmp/cudaenv-wheels/uninstall (removed in
                                              the image first), and a refusal of any wheel that
                                              is for the build machine's CPU, not ARCH

Console scripts name /opt/venv/bin/python, which is the image's interpreter; bytecode is the
same on every CPU for one Python version, and the copy keeps the sources' times it checks.
Runs on the Python of the stack (3.6 and newer), so nothing newer than 3.6 is used here.
"""

import json
import os
import shutil
import sys
import sysconfig

VENV = "/opt/venv"
STATE = "/tmp/cudaenv-venv-before.json"
OUT = "/tmp/cudaenv-wheels"


def site_packages():
    return sysconfig.get_paths()["purelib"]  # run by /opt/venv/bin/python: the venv's own


def snapshot():
    """Every file and link under the venv: what says it was written again (inode, time, size)."""
    found = {}
    for directory, _subdirs, files in os.walk(VENV):
        for name in files:
            path = os.path.join(directory, name)
            st = os.lstat(path)
            found[os.path.relpath(path, VENV)] = [st.st_ino, st.st_mtime_ns, st.st_size]
    return found


def dist_name(dist_info):
    with open(os.path.join(dist_info, "METADATA"), encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.lower().startswith("name:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():
                break
    raise SystemExit("cudaenv-venv-delta: {} has no Name in its METADATA".format(dist_info))


def before(target):
    site = site_packages()
    copied = {}
    if target:
        theirs = os.path.join(target, os.path.relpath(site, VENV))
        for name in sorted(os.listdir(theirs)) if os.path.isdir(theirs) else []:
            if name.endswith((".dist-info", ".egg-info")) and os.path.isdir(os.path.join(theirs, name)):
                shutil.copytree(os.path.join(theirs, name), os.path.join(site, name), symlinks=True)
                if name.endswith(".dist-info"):
                    copied[os.path.relpath(os.path.join(site, name), VENV)] = dist_name(os.path.join(site, name))
    with open(STATE, "w") as handle:
        json.dump({"files": snapshot(), "dists": copied}, handle)


def platform_fits(wheel_file, arch):
    """Whether every Tag of an installed wheel runs on ``arch`` (any, or a platform tag for it)."""
    tags = []
    with open(wheel_file, encoding="utf-8", errors="replace") as handle:
        tags = [line.split(":", 1)[1].strip() for line in handle if line.lower().startswith("tag:")]
    for tag in tags:
        for platform in tag.split("-")[-1].split("."):
            if platform != "any" and not platform.endswith("_" + arch):
                return False
    return True


def after(arch):
    with open(STATE) as handle:
        state = json.load(handle)
    old, new = state["files"], snapshot()
    changed = sorted(path for path, stat in new.items() if old.get(path) != stat)
    wrong = []
    for path in changed:
        parts = path.split(os.sep)
        if parts[-1] == "WHEEL" and parts[-2].endswith(".dist-info"):
            if not platform_fits(os.path.join(VENV, path), arch):
                wrong.append(parts[-2])
    if wrong:
        raise SystemExit("cudaenv-venv-delta: {} built or chosen for {}, not for {}: a package that compiles "
                         "must be built in the image (list it in [build] build_from_source)".format(
                             ", ".join(wrong), os.uname().machine, arch))
    # a distribution of the image that uv removed or wrote again goes before the new files come
    replaced = sorted({name for dist, name in state["dists"].items()
                       if any(old[path] != new.get(path) for path in old if path.startswith(dist + os.sep))})
    os.makedirs(os.path.join(OUT, "venv"))
    for path in changed:
        destination = os.path.join(OUT, "venv", path)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        os.rename(os.path.join(VENV, path), destination)  # keeps the times the bytecode was checked against
    with open(os.path.join(OUT, "uninstall"), "w") as handle:
        handle.write("".join(name + "\n" for name in replaced))
    print("cudaenv-venv-delta: installed on {} for {}: {} files for the image{}".format(
        os.uname().machine, arch, len(changed), "; replacing " + ", ".join(replaced) if replaced else ""))


def main(argv):
    if len(argv) >= 1 and argv[0] == "before" and len(argv) <= 2:
        before(argv[1] if len(argv) == 2 else None)
    elif len(argv) == 2 and argv[0] == "after":
        after(argv[1])
    else:
        raise SystemExit("usage: cudaenv-venv-delta before [TARGET_VENV] | after ARCH")


if __name__ == "__main__":
    main(sys.argv[1:])

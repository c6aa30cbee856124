"""The rules `cudaenv export kubernetes` writes by, in-process: Kubernetes names and label values,
`--shm-size` as a quantity of the same bytes, the pod's numeric non-root user, `$` written as `$$`
(Kubernetes expands `$(NAME)`), pass-through names read from a Secret, the Job/Deployment fields,
the header's comments, and the one-line refusals of each flag."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from cudaenv.errors import UserError
from cudaenv.export.kubernetes import (MAX_ID, Workload, build_workload, comment, default_name, dns_label,
                                       dns_subdomain, env_entries, file_name, header, label_value, literal, manifest,
                                       render, requirement_dict, run_as, secret_for, shm_quantity)
from cudaenv.export.placement import Requirement
from tests.unit.export.test_same_process_models import locked  # noqa: F401  (the locked-project fixture)

IMAGE = "registry.example.com:5000/ml/detector@sha256:" + "0123456789abcdef" * 4
WHERE = "/p/cudaenv.toml"
STACK = SimpleNamespace(frameworks=(("torch", "2.5.1"),), cuda="12.4", python="3.11", min_driver="550.54.15", arch="x86_64",
                        min_driver_compat="525.60.13", driver_compatibility="native", cpu=False)


def fake_project(*, gpus="none", command=("python", "train.py"), env=(), ipc=None, shm_size="8g", name="detector"):
    run = SimpleNamespace(gpus=gpus, command=command, env=env, ipc=ipc, shm_size=shm_size)
    return SimpleNamespace(name=name, root=Path("/p"), config_path=Path(WHERE), run=run)


def workload(project=None, **kwargs) -> Workload:
    kwargs.setdefault("image", IMAGE)
    kwargs.setdefault("user", "4242:4343")
    return build_workload(project or fake_project(), None, STACK, **kwargs)


def message(call, *args, **kwargs) -> str:
    with pytest.raises(UserError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


# --- names and values ------------------------------------------------------------------------------

LABEL_RULE = ("expected a Kubernetes name (RFC 1123 label: at most 63 lower-case letters, digits and '-', starting "
              "and ending with a letter or digit)")


@pytest.mark.parametrize("value", ["a", "a-1", "0", "a" * 63])
def test_rfc1123_labels_that_are_names(value):
    assert dns_label(value, "--name") == value


@pytest.mark.parametrize("value", ["", "-a", "a-", "A", "a.b", "a" * 64, None], ids=["empty", "lead", "trail", "upper",
                                                                                    "dot", "long", "none"])
def test_rfc1123_labels_that_are_refused(value):
    assert message(dns_label, value, "--namespace") == f"--namespace: {LABEL_RULE}, got {value!r}"


@pytest.mark.parametrize("value", ["a", "a.b-c", "a" * 253])
def test_rfc1123_subdomains_that_are_names(value):
    assert dns_subdomain(value, "--secret") == value


@pytest.mark.parametrize("value", ["", "a..b", ".a", "A", "a" * 254, 5], ids=["empty", "dots", "lead", "upper", "long",
                                                                            "number"])
def test_rfc1123_subdomains_that_are_refused(value):
    assert message(dns_subdomain, value, "--runtime-class") == (
        "--runtime-class: expected a Kubernetes name (RFC 1123 subdomain: lower-case letters, digits, '-' and '.', "
        f"at most 253 characters), got {value!r}")


@pytest.mark.parametrize("value, ok", [("", True), ("A_b.c-9", True), ("a" * 63, True), ("a" * 64, False),
                                       ("_a", False), ("a b", False), (None, False)])
def test_label_values(value, ok):
    if ok:
        assert label_value(value, "--name") == value
    else:
        assert message(label_value, value, "--name") == (
            "--name: expected a Kubernetes label value (at most 63 letters, digits, '-', '_' and '.', starting and "
            f"ending with a letter or digit), got {value!r}")


@pytest.mark.parametrize("name, expected", [
    ("Detector", "detector"), ("My_Project 2", "my-project-2"), ("--x--", "x"), ("!!", "cudaenv"),
    ("a" * 62 + "-b", "a" * 62), ("a-b", "a-b"),
], ids=["lower", "other-chars", "stripped", "empty", "cut-then-stripped", "kept"])
def test_the_default_name_is_the_project_name_as_a_label(name, expected):
    assert default_name(name) == expected


@pytest.mark.parametrize("text, expected", [
    ("8g", "8Gi"), ("8G", "8Gi"), ("512m", "512Mi"), ("1.5g", "1536Mi"), ("64k", "64Ki"), ("1024", "1Ki"),
    ("1000", "1000"), ("100b", "100"), ("1g", "1Gi"), ("2048k", "2Mi"), ("0.5k", "512"), ("1.000001k", "1Ki"),
], ids=["g", "upper", "m", "fraction", "k", "bytes", "odd-bytes", "b", "one-g", "k-to-mi", "half-k", "dropped"])
def test_shm_size_is_a_quantity_of_the_same_bytes(text, expected):
    """Docker's units are binary; the fraction of a byte is dropped as Docker's RAMInBytes does."""
    assert shm_quantity(text, "--shm-size") == expected


@pytest.mark.parametrize("text, expected", [
    ("8x", "--shm-size: expected a size like 8g, 512m or 1.5g (Docker's --shm-size units), got '8x'"),
    ("", "--shm-size: expected a size like 8g, 512m or 1.5g (Docker's --shm-size units), got ''"),
    (8, "--shm-size: expected a size like 8g, 512m or 1.5g (Docker's --shm-size units), got 8"),
    ("0", "--shm-size: expected a size above zero for the shared-memory volume, got '0'"),
    ("0.1b", "--shm-size: expected a size above zero for the shared-memory volume, got '0.1b'"),
], ids=["unit", "empty", "number", "zero", "under-a-byte"])
def test_bad_shm_sizes_are_refused(text, expected):
    assert message(shm_quantity, text, "--shm-size") == expected


@pytest.mark.parametrize("text, expected", [("1000", (1000, 1000)), ("1000:2000", (1000, 2000)), ("1:0", (1, 0)),
                                            (f"{MAX_ID}:{MAX_ID}", (MAX_ID, MAX_ID))])
def test_the_user_is_numeric_and_the_group_defaults_to_it(text, expected):
    assert run_as(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("root", "--user: expected a numeric UID or UID:GID like 1000:1000, got 'root'"),
    ("1000:", "--user: expected a numeric UID or UID:GID like 1000:1000, got '1000:'"),
    ("0", "--user: expected a non-root UID (the pod runs with runAsNonRoot), got 0"),
    ("0:1000", "--user: expected a non-root UID (the pod runs with runAsNonRoot), got 0"),
    (f"{MAX_ID + 1}", f"--user: expected IDs up to {MAX_ID}, got '{MAX_ID + 1}'"),
    (f"1:{MAX_ID + 1}", f"--user: expected IDs up to {MAX_ID}, got '1:{MAX_ID + 1}'"),
], ids=["name", "empty-gid", "root", "root-gid", "uid-too-big", "gid-too-big"])
def test_bad_users_are_refused(text, expected):
    assert message(run_as, text) == expected


def test_without_a_user_the_pod_runs_as_the_images_build_user(monkeypatch):
    monkeypatch.setenv("CUDAENV_UID", "4242")
    monkeypatch.setenv("CUDAENV_GID", "4343")
    assert run_as(None) == (4242, 4343)


def test_dollars_are_doubled_and_the_secret_name_fits_a_label():
    assert literal("$(X) $$ $Y") == "$$(X) $$$$ $$Y"
    assert secret_for("detector") == "detector-env"
    assert secret_for("a" * 63) == "a" * 59 + "-env"
    assert secret_for("a" * 58 + "-b") == "a" * 58 + "-env"
    assert message(comment, "a\nb") == "refusing 'a\\nb' in a manifest comment: it contains a control character"
    assert comment("a b") == "a b"


def test_a_requirement_is_one_expression_with_values_only_when_it_has_some():
    assert requirement_dict(Requirement("k", "Exists")) == {"key": "k", "operator": "Exists"}
    assert requirement_dict(Requirement("k", "In", ("1", "2"))) == {"key": "k", "operator": "In", "values": ["1", "2"]}
    assert render({"e": requirement_dict(Requirement("k", "Gt", ("5",)))}) == "e: {key: k, operator: Gt, values: ['5']}\n"


# --- build_workload --------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, expected", [
    ({"kind": "pod"}, "--kind: expected one of job, deployment, got 'pod'"),
    ({"replicas": 2}, "--replicas applies to --kind deployment only"),
    ({"kind": "deployment", "backoff_limit": 1}, "--backoff-limit applies to --kind job only"),
    ({"kind": "deployment", "replicas": -1}, "--replicas: expected a count from 0, got -1"),
    ({"kind": "deployment", "replicas": MAX_ID + 1}, f"--replicas: expected a count from 0, got {MAX_ID + 1}"),
    ({"backoff_limit": -1}, "--backoff-limit: expected a count from 0, got -1"),
    ({"backoff_limit": MAX_ID + 1}, f"--backoff-limit: expected a count from 0, got {MAX_ID + 1}"),
    ({"project": fake_project(command=())}, f"nothing to run: give the command after `--`, or set [run] command in {WHERE}"),
    ({"secret": "s"}, "--secret names the Secret that -e NAME (without a value) reads from: give such a -e too"),
    ({"name": "Bad"}, f"--name: {LABEL_RULE}, got 'Bad'"),
    ({"namespace": "a_b"}, f"--namespace: {LABEL_RULE}, got 'a_b'"),
    ({"passthrough": ("T",), "secret": "S"}, "--secret: expected a Kubernetes name (RFC 1123 subdomain: lower-case "
                                             "letters, digits, '-' and '.', at most 253 characters), got 'S'"),
    ({"project": fake_project(shm_size="lots")}, f"{WHERE}: run.shm_size: expected a size like 8g, 512m or 1.5g "
                                                 "(Docker's --shm-size units), got 'lots'"),
    ({"shm_size": "0"}, "--shm-size: expected a size above zero for the shared-memory volume, got '0'"),
    ({"user": "0"}, "--user: expected a non-root UID (the pod runs with runAsNonRoot), got 0"),
    ({"project": fake_project(name="a\nb")}, "refusing 'a\\nb' in a manifest comment: it contains a control character"),
], ids=["kind", "replicas-job", "backoff-deployment", "replicas-negative", "replicas-big", "backoff-negative",
        "backoff-big", "no-command", "secret-alone", "name", "namespace", "secret-name", "run-shm", "flag-shm", "root",
        "project-newline"])
def test_bad_flags_are_refused_in_one_line(kwargs, expected):
    assert message(workload, **kwargs) == expected


def test_counts_at_the_edges_are_accepted():
    assert workload(kind="deployment", replicas=0).replicas == 0
    assert workload(kind="deployment", replicas=MAX_ID).replicas == MAX_ID
    assert workload(kind="deployment").replicas == 1
    assert workload(backoff_limit=MAX_ID).backoff_limit == MAX_ID
    assert workload(backoff_limit=3).backoff_limit == 3
    assert workload().backoff_limit == 0


def test_no_gpu_hides_the_devices_and_asks_no_placement():
    """CUDA images set NVIDIA_VISIBLE_DEVICES=all: without void the runtime hook hands every GPU over,
    and a pass-through of that name cannot undo it."""
    made = workload(env={"A": "1"}, passthrough=("NVIDIA_VISIBLE_DEVICES", "T"))
    assert made.gpus == 0 and made.affinity is None
    assert made.env == (("A", "1"), ("NVIDIA_VISIBLE_DEVICES", "void"))
    assert made.passed == ("T",) and made.secret == "detector-env"


def test_the_workload_carries_the_checked_values():
    made = workload(name="train", namespace="ml", runtime_class="nvidia", passthrough=("T",), secret="hf.creds",
                    shm_size="1g", command=("bash", "-c", "x"), env={"A": "2"},
                    project=fake_project(env=(("A", "1"), ("B", "1"))))
    assert (made.kind, made.name, made.namespace, made.runtime_class, made.secret) == \
        ("job", "train", "ml", "nvidia", "hf.creds")
    assert (made.image, made.project, made.uid, made.gid) == (IMAGE, "detector", 4242, 4343)
    assert made.summary == "torch 2.5.1 | CUDA 12.4 | Python 3.11"
    assert made.driver_need == "a driver >= 550.54.15 natively (or >= 525.60.13 through minor-version compatibility)"
    assert (made.shm, made.shm_note) == ("1Gi", "from --shm-size 1g")
    assert made.command == ("bash", "-c", "x") and made.env == (("A", "2"), ("B", "1"), ("NVIDIA_VISIBLE_DEVICES", "void"))
    assert made.gpus_note == 'from [run] gpus = "none"' and made.forward is False
    assert workload(project=fake_project(name="My Project")).name == "my-project"


def test_shm_note_says_where_the_size_came_from_and_that_host_ipc_is_dropped():
    made = workload(project=fake_project(shm_size="2g"))
    assert (made.shm, made.shm_note) == ("2Gi", "from [run] shm_size = '2g'")
    made = workload(project=fake_project(shm_size="2g", ipc="host"))
    assert made.shm_note == ("from [run] shm_size = '2g' ([run] ipc = \"host\" is not carried over: hostIPC shares "
                             "the node's IPC namespace)")
    assert workload(project=fake_project(ipc="private")).shm_note == "from [run] shm_size = '8g'"


def test_no_frameworks_is_the_cuda_runtime_and_forward_compatibility_is_noted():
    bare = SimpleNamespace(**{**vars(STACK), "frameworks": (), "driver_compatibility": "forward"})
    made = build_workload(fake_project(), None, bare, image=IMAGE, user="1:1")
    assert made.summary == "CUDA runtime | CUDA 12.4 | Python 3.11" and made.forward is True


# --- the manifest ----------------------------------------------------------------------------------


def test_env_entries_escape_values_and_read_passed_names_from_the_secret():
    made = workload(env={"B": "$(X)"}, passthrough=("A",))
    assert env_entries(made) == [
        {"name": "A", "valueFrom": {"secretKeyRef": {"name": "detector-env", "key": "A"}}},
        {"name": "B", "value": "$$(X)"},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
    ]


def test_a_job_without_gpus():
    made = workload(command=("echo", "$HOME"))
    document = manifest(made)
    assert document["apiVersion"] == "batch/v1" and document["kind"] == "Job"
    assert document["metadata"] == {
        "name": "detector",
        "labels": {"app.kubernetes.io/name": "detector", "app.kubernetes.io/managed-by": "cudaenv"},
        "annotations": {"cudaenv.io/project": "detector", "cudaenv.io/stack": "torch 2.5.1 | CUDA 12.4 | Python 3.11",
                        "cudaenv.io/driver": made.driver_need}}
    assert document["spec"]["backoffLimit"] == 0
    template = document["spec"]["template"]
    assert template["metadata"] == {"labels": document["metadata"]["labels"]}
    pod = template["spec"]
    assert pod["restartPolicy"] == "Never"
    assert "runtimeClassName" not in pod and "affinity" not in pod and "tolerations" not in pod
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 4242, "runAsGroup": 4343,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    (container,) = pod["containers"]
    assert container == {
        "name": "detector", "image": IMAGE, "args": ["echo", "$$HOME"], "workingDir": "/workspace",
        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}


def test_a_deployment_has_replicas_a_selector_and_a_namespace():
    made = workload(kind="deployment", replicas=3, namespace="ml", runtime_class="nvidia")
    document = manifest(made)
    assert document["apiVersion"] == "apps/v1" and document["kind"] == "Deployment"
    assert document["metadata"]["namespace"] == "ml"
    assert document["spec"]["replicas"] == 3
    assert document["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "detector"}}
    pod = document["spec"]["template"]["spec"]
    assert "restartPolicy" not in pod and pod["runtimeClassName"] == "nvidia"
    assert file_name(made) == "detector-deployment.yaml" and file_name(workload()) == "detector-job.yaml"


def test_a_gpu_job_asks_for_the_gpus_and_places_by_the_resolver(locked):
    project, matrix, stack = locked
    made = build_workload(project, matrix, stack, image=IMAGE, user="1000", gpus=2)
    pod = manifest(made)["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["affinity"] == {"nodeAffinity": made.affinity}
    assert made.affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    text = header(made)
    assert "# Node affinity: generated from cudaenv's resolver rules" in text
    assert "No GPU is requested" not in text


def test_the_header_says_how_the_workload_runs():
    made = workload(command=("echo", "$X"))
    lines = header(made).splitlines()
    assert all(line.startswith("# ") for line in lines)
    assert lines[0] == "# Job for detector: torch 2.5.1 | CUDA 12.4 | Python 3.11"
    assert lines[1].startswith("# Generated by cudaenv ") and lines[1].endswith(
        " (`cudaenv export kubernetes --kind job`); `kubectl apply -f` it.")
    assert lines[2] == f"# The image needs {made.driver_need}."
    assert lines[3] == "# GPUs: 0 (from [run] gpus = \"none\"); /dev/shm: 8Gi in memory (from [run] shm_size = '8g';"
    assert lines[4] == "#   it counts against the container's memory limit)."
    assert lines[5] == "# No GPU is requested, so no GPU node affinity; NVIDIA_VISIBLE_DEVICES=void hides the node's GPUs."
    assert lines[6] == "# Runs as UID 4242, GID 4343: the numeric non-root user cudaenv built into the image."
    assert lines[7] == "# Every $ in args and env values is written as $$: Kubernetes would otherwise expand $(NAME)."
    assert len(lines) == 8
    assert "Every $" not in header(workload())
    assert "Every $" in header(workload(env={"A": "$"}))
    assert header(workload(kind="deployment")).startswith("# Deployment for detector")


def test_the_header_says_how_to_create_the_secret():
    text = header(workload(passthrough=("B", "A"), namespace="ml"))
    assert ("# A, B: passed through (-e NAME), so read from Secret detector-env, never written here. Create it first:\n"
            '#   kubectl create secret generic detector-env --namespace ml --from-literal=A="$A" '
            '--from-literal=B="$B"\n') in text
    assert '#   kubectl create secret generic detector-env --from-literal=A="$A"\n' in header(workload(passthrough=("A",)))


@pytest.mark.parametrize("value", ["y", "N", "off", "On", "yes", "NO", "true", "null", "~", "", "1e3", "0o17", "0x1F",
                                   ".5", "-1", ".inf", ".NaN"])
def test_strings_a_kubernetes_reader_would_retype_are_quoted(value):
    text = render({"v": value})
    assert text == f"v: '{value}'\n"
    assert yaml.safe_load(text)["v"] == value


@pytest.mark.parametrize("value", ["yes please", "1.2.3", "a", "o", "0o8", "ON!"])
def test_other_strings_stay_plain(value):
    assert render({"v": value}) == f"v: {value}\n"


def test_the_heading_goes_first_and_the_order_is_kept():
    assert render({"b": 1, "a": [1]}, "# h\n") == "# h\nb: 1\na:\n- 1\n"
    assert render({"a": "x" * 150}) == "a: " + "x" * 150 + "\n"


def test_the_manifest_is_ascii_in_block_style():
    """One list item and one key a line (match expressions excepted), so a committed manifest diffs
    line by line; non-ASCII text is escaped."""
    text = render({"args": ["echo", "é"], "labels": {"a": "b"}})
    assert text == "args:\n- echo\n- \"\\xE9\"\nlabels:\n  a: b\n"
    assert yaml.safe_load(text)["args"] == ["echo", "é"]


def test_the_secret_name_drops_only_trailing_dashes_of_the_cut():
    """The cut name keeps every other character as given; only a dash left at the end goes."""
    assert secret_for("X" * 58 + "X-") == "X" * 59 + "-env"
    assert secret_for("a-X") == "a-X-env"


def test_a_workload_whose_name_is_no_label_value_is_refused_by_the_manifest():
    """The name is also the pods' app.kubernetes.io/name label: a Workload made by hand with a
    longer name is refused naming --name, not written as a manifest the API server rejects."""
    import dataclasses

    made = dataclasses.replace(workload(), name="a" * 64)
    assert message(manifest, made) == (
        "--name: expected a Kubernetes label value (at most 63 letters, digits, '-', '_' and '.', starting and "
        f"ending with a letter or digit), got {'a' * 64!r}")


def test_long_values_fold_at_200_columns():
    """Lines up to 200 columns stay whole (a long command reads as written); past that PyYAML folds
    at a space, which a YAML reader joins back."""
    at_limit = "x" * 197 + " yyyyy"  # "a: " + 197 + 1 space: the break point is column 200
    over = "x" * 198 + " yyyyy"
    assert render({"a": at_limit}) == f"a: {at_limit}\n"
    assert render({"a": over}) == "a: " + "x" * 198 + "\n  yyyyy\n"
    assert yaml.safe_load(render({"a": over}))["a"] == over


def test_flags_edges_and_where_errors_point(locked):
    """--backoff-limit 0 is a count (no retry), --gpus overrides [run] gpus, a bad [run] gpus names
    the project file, and no Secret is named when nothing is passed through."""
    project, matrix, stack = locked
    assert workload(backoff_limit=0).backoff_limit == 0
    assert project.run.gpus == "2"
    assert build_workload(project, matrix, stack, image=IMAGE, user="1000", gpus=1).gpus == 1
    assert build_workload(project, matrix, stack, image=IMAGE, user="1000").gpus == 2
    assert message(workload, project=fake_project(gpus="lots")).startswith(f"{WHERE}: run.gpus: ")
    assert workload().secret is None and workload(passthrough=("A",)).secret == "detector-env"


def test_one_byte_of_shared_memory_is_the_smallest_size():
    assert shm_quantity("1", "--shm-size") == "1" and shm_quantity("1b", "--shm-size") == "1"
    assert message(shm_quantity, "0.5", "--shm-size").endswith("above zero for the shared-memory volume, got '0.5'")


def test_every_framework_is_in_the_summary_and_one_gpu_is_placed(locked):
    both = SimpleNamespace(**{**vars(STACK), "frameworks": (("torch", "2.5.1"), ("jax", "0.4.30"))})
    made = build_workload(fake_project(), None, both, image=IMAGE, user="1:1")
    assert made.summary == "torch 2.5.1, jax 0.4.30 | CUDA 12.4 | Python 3.11"
    project, matrix, stack = locked
    assert build_workload(project, matrix, stack, image=IMAGE, user="1000", gpus=1).affinity is not None


@pytest.mark.parametrize("kwargs, flag", [({"image": "Bad Image"}, "--image"), ({"runtime_class": "Bad_Class"}, "--runtime-class")],
                         ids=["image", "runtime-class"])
def test_a_bad_flag_value_is_named_by_its_flag(kwargs, flag):
    assert message(workload, **kwargs).startswith(f"{flag}: ")

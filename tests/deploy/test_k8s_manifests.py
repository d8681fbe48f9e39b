"""deploy/k8s (docs/scale-out.md): every manifest is valid Kubernetes 1.37, strictly (no unknown field),
checked offline against the schemas the kubernetes-validate package carries; and the manifests keep the
promises the design makes: no Docker socket or host path in any pod, platform pods not root, no platform
secret in the sandbox controller or a sandbox, sandboxes denied all traffic by default and reachable on
the agent port by engine workers only."""

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
VERSION = "1.37.0"


def _documents() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


DOCS = _documents()


def _pod_specs() -> list[tuple[str, str, dict]]:
    """(kind/name, namespace, pod spec) of every workload and pod template."""
    specs = []
    for _, doc in DOCS:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        namespace = doc["metadata"].get("namespace", "")
        if doc["kind"] in ("Deployment", "Job", "DaemonSet", "StatefulSet"):
            specs.append((where, namespace, doc["spec"]["template"]["spec"]))
        elif doc["kind"] == "PodTemplate":
            specs.append((where, namespace, doc["template"]["spec"]))
    return specs


@pytest.mark.parametrize(
    ("name", "doc"), DOCS, ids=[f"{n}:{d['kind']}/{d['metadata']['name']}" for n, d in DOCS]
)
def test_each_manifest_is_valid_kubernetes(name, doc):
    kubernetes_validate.validate(doc, VERSION, strict=True)


def test_the_kustomization_names_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


def test_web_workers_beat_migrate_and_the_sandbox_controller_are_all_there():
    workloads = {(doc["kind"], doc["metadata"]["name"]) for _, doc in DOCS}
    for name in ("web", "worker", "worker-repo", "worker-webhooks", "beat", "sandbox-controller"):
        assert ("Deployment", name) in workloads
    assert ("Job", "migrate") in workloads
    assert ("PodTemplate", "hangar-sandbox") in workloads


def test_no_pod_has_the_docker_socket_a_host_path_or_privilege():
    for where, _, spec in _pod_specs():
        assert not any("hostPath" in volume for volume in spec.get("volumes", [])), where
        assert not spec.get("hostNetwork") and not spec.get("hostPID"), where
        for container in spec["containers"]:
            security = container.get("securityContext", {})
            assert not security.get("privileged"), where
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where
            assert not any("docker.sock" in str(m) for m in container.get("volumeMounts", [])), where


def test_every_pod_runs_as_a_non_root_user_without_a_service_token_unless_it_needs_one():
    for where, _, spec in _pod_specs():
        assert spec["securityContext"]["runAsNonRoot"] is True, where
        assert spec["securityContext"]["runAsUser"] != 0, where
        if where != "Deployment/sandbox-controller":  # the one pod that talks to the Kubernetes API
            assert spec.get("automountServiceAccountToken") is False, where


def _secret_refs(spec: dict) -> list[str]:
    refs = [v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v]
    for container in spec["containers"]:
        refs += [e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e]
        refs += [
            e["valueFrom"]["secretKeyRef"]["name"]
            for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})
        ]
    return refs


def test_the_platform_secret_reaches_only_web_workers_beat_and_migrate():
    holders = {where for where, _, spec in _pod_specs() if _secret_refs(spec)}
    assert holders == {
        "Deployment/web",
        "Deployment/worker",
        "Deployment/worker-repo",
        "Deployment/worker-webhooks",
        "Deployment/beat",
        "Job/migrate",
    }


def test_sandboxes_are_denied_all_traffic_but_the_agent_port_from_engine_workers():
    policies = {doc["metadata"]["name"]: doc for _, doc in DOCS if doc["kind"] == "NetworkPolicy"}
    deny = policies["default-deny"]
    assert deny["metadata"]["namespace"] == "hangar-sandboxes"
    assert deny["spec"]["podSelector"] == {} and set(deny["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny["spec"] and "egress" not in deny["spec"]
    agent = policies["agent-from-workers"]["spec"]
    assert agent["podSelector"]["matchLabels"] == {"app.kubernetes.io/component": "sandbox"}
    [rule] = agent["ingress"]
    [source] = rule["from"]
    assert source["podSelector"]["matchLabels"] == {"app.kubernetes.io/component": "worker"}
    assert rule["ports"] == [{"port": 7070, "protocol": "TCP"}]
    sandbox_rules = [
        p
        for p in policies.values()
        if p["metadata"]["namespace"] == "hangar-sandboxes"
        and p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/component") == "sandbox"
    ]
    assert all("Egress" not in p["spec"]["policyTypes"] for p in sandbox_rules)  # no way out but the proxy


def test_an_egress_proxy_never_reaches_private_or_metadata_addresses():
    proxy = next(d for _, d in DOCS if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "proxy-out")
    blocks = [t["ipBlock"] for rule in proxy["spec"]["egress"] for t in rule["to"] if "ipBlock" in t]
    for block in blocks:
        assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} <= set(block["except"])

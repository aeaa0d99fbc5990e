#!/usr/bin/env python3
"""The Kubernetes and KServe manifests of deploy/:

1. every document validates: Kubernetes' own kinds against the API's schemas
   (kubernetes-validate from PyPI, strict: unknown fields refused), the
   custom resources (KServe's ClusterServingRuntime and InferenceService,
   Istio's DestinationRule) against test/deploy/crd-schemas.json, whose
   containers, resources and metadata are Kubernetes' schemas again;
2. a misspelt field in each kind is refused (the validation bites);
3. the containers' arguments start `cellrun serve` (the example model in
   place of the mounted one, free ports in place of theirs), their
   containerPorts are the ports the arguments give, and their probe paths
   answer 200 on the port they name.

    manifests_test.py REPO_ROOT CELLRUN MODEL.cellpack
"""
import copy
import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

root, cellrun, model = sys.argv[1:4]
KUBERNETES = "1.30.0"

documents = []
for path in sorted(glob.glob(os.path.join(root, "deploy", "kubernetes", "*.yaml")) +
                   glob.glob(os.path.join(root, "deploy", "kserve", "*.yaml"))):
    with open(path) as f:
        documents += [(os.path.relpath(path, root), doc)
                      for doc in yaml.safe_load_all(f) if doc]
with open(os.path.join(root, "test", "deploy", "crd-schemas.json")) as f:
    custom = json.load(f)
definitions = schema_contents(
    f"kubernetes-json-schema/v{KUBERNETES}-local-strict/_definitions.json",
    KUBERNETES)
registry = Resource.from_contents(definitions) @ Registry()


def validate(doc):
    """Raises on an invalid document; returns what it was checked against."""
    key = f"{doc['apiVersion']}/{doc['kind']}"
    if key in custom:
        jsonschema.Draft202012Validator(custom[key], registry=registry).validate(doc)
        return f"{key} (test/deploy/crd-schemas.json)"
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    return f"{key} (Kubernetes {KUBERNETES})"


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


# 1. Everything validates.
kinds = set()
for path, doc in documents:
    try:
        print(f"{path}: {doc['metadata']['name']}: valid as {validate(doc)}")
    except Exception as error:
        fail(f"{path}: {doc['kind']} {doc['metadata']['name']}: {error}")
    kinds.add(doc["kind"])
expected = {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap",
            "DestinationRule", "ClusterServingRuntime", "InferenceService"}
if kinds != expected:
    fail(f"kinds {sorted(kinds)}, expected {sorted(expected)}")


# 2. A misspelt field is refused, in every kind that has one to misspell.
def misspelt(kind, edit):
    doc = copy.deepcopy(next(d for _, d in documents if d["kind"] == kind))
    edit(doc)
    try:
        validate(doc)
    except Exception:
        return
    fail(f"a {kind} with a misspelt field was accepted")


def container(doc):
    spec = doc["spec"]
    return (spec["template"]["spec"] if "template" in spec else spec)["containers"][0]


misspelt("Deployment", lambda d: container(d).update(readinesProbe={}))
misspelt("Service", lambda d: d["spec"]["ports"][0].update(target=8000))
misspelt("HorizontalPodAutoscaler", lambda d: d["spec"].update(maxReplica=3))
misspelt("ClusterServingRuntime", lambda d: d["spec"].update(protocolVersion=["v2"]))
misspelt("ClusterServingRuntime", lambda d: container(d).update(port=8080))
misspelt("InferenceService",
         lambda d: d["spec"]["predictor"]["model"].update(storageURI="s3://x"))
misspelt("DestinationRule", lambda d: d["spec"]["trafficPolicy"]["loadBalancer"]
         ["consistentHash"].update(httpHeader="x-sequence-id"))


# 3. The containers' arguments, ports and probes are cellrun serve's.
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_as(path, doc):
    spec = container(doc)
    args = list(spec["args"])
    if args[0] != "serve" or not args[1].endswith("model.cellpack"):
        fail(f"{path}: args {args} do not serve a model.cellpack")
    args[1] = model
    ports, mapped = {}, {}
    for flag in ("--http-port", "--grpc-port", "--metrics-port"):
        at = args.index(flag)
        ports[flag] = int(args[at + 1])
        mapped[ports[flag]] = free_port()
        args[at + 1] = str(mapped[ports[flag]])
    named = {p.get("name"): p["containerPort"] for p in spec["ports"]}
    for port in spec["ports"]:
        if port["containerPort"] not in ports.values():
            fail(f"{path}: containerPort {port['containerPort']} is not one cellrun "
                 f"serve is given ({ports})")
    args[args.index("--host") + 1] = "127.0.0.1"
    process = subprocess.Popen([cellrun, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        for probe in ("readinessProbe", "livenessProbe"):
            get = spec[probe]["httpGet"]
            port = named.get(get["port"], get["port"])
            url = f"http://127.0.0.1:{mapped[port]}{get['path']}"
            deadline = time.time() + 30
            while True:
                try:
                    with urllib.request.urlopen(url, timeout=2) as reply:
                        if reply.status == 200:
                            break
                except OSError:
                    pass
                if time.time() > deadline or process.poll() is not None:
                    fail(f"{path}: {probe} {get['path']} on port {port} never "
                         f"answered 200 (cellrun {' '.join(args)})")
                time.sleep(0.1)
        with urllib.request.urlopen(
                f"http://127.0.0.1:{mapped[ports['--metrics-port']]}/metrics") as reply:
            if b"cellrun_request_queue_seconds_count" not in reply.read():
                fail(f"{path}: /metrics lacks the autoscaling metric's series")
    finally:
        process.terminate()
        process.wait(timeout=60)
    print(f"{path}: {doc['kind']}: cellrun serve {' '.join(spec['args'][2:])} "
          f"answers its probes")


for path, doc in documents:
    if doc["kind"] in ("Deployment", "ClusterServingRuntime"):
        serve_as(path, doc)
print(f"manifests test: {len(documents)} documents valid, misspellings refused, "
      f"containers serve as their manifests say")

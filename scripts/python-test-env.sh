#!/usr/bin/env bash
# Makes the Python environment of the server tests and the peers: a virtual
# environment over Debian's python3 (which sees python3-numpy, python3-torch,
# python3-onnx and python3-prometheus-client) with tritonclient (HTTP and
# gRPC), onnxruntime (the ONNX Runtime peer) and kubernetes-validate (the
# deployment manifests' schema check) from PyPI.
# Safe to run twice: an environment that already imports them is kept.
#   python-test-env.sh DIR
set -euo pipefail
venv="$1"
if [ -x "$venv/bin/python" ] &&
   "$venv/bin/python" -c 'import tritonclient.http, tritonclient.grpc, numpy, prometheus_client, onnxruntime, kubernetes_validate' 2>/dev/null; then
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  'tritonclient[http,grpc]>=2.40' 'onnxruntime>=1.16' 'kubernetes-validate>=1.30'
"$venv/bin/python" -c 'import tritonclient.http, tritonclient.grpc, numpy, prometheus_client, onnxruntime, kubernetes_validate'
echo "python-test-env: tritonclient, onnxruntime and kubernetes-validate installed in $venv"

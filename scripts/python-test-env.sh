#!/usr/bin/env bash
# Makes the Python environment of the server tests: a virtual environment
# over Debian's python3 (which sees python3-numpy and
# python3-prometheus-client) with tritonclient (HTTP and gRPC) from PyPI.
# Safe to run twice: an environment that already imports them is kept.
#   python-test-env.sh DIR
set -euo pipefail
venv="$1"
if [ -x "$venv/bin/python" ] &&
   "$venv/bin/python" -c 'import tritonclient.http, tritonclient.grpc, numpy, prometheus_client' 2>/dev/null; then
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  'tritonclient[http,grpc]>=2.40'
"$venv/bin/python" -c 'import tritonclient.http, tritonclient.grpc, numpy, prometheus_client'
echo "python-test-env: tritonclient installed in $venv"

#!/usr/bin/env bash
# Sourced by the profiling scripts: installs Debian's linux-perf when `perf`
# is missing (it is not a build or test dependency; the kernel must also
# allow perf events, see perf_event_paranoid).
if ! command -v perf >/dev/null; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
fi

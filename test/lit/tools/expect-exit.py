#!/usr/bin/env python3
"""expect-exit.py CODE CMD ARGS...: runs CMD, passes its stdout/stderr through,
and exits 0 only if CMD exited with exactly CODE (lit's `not` accepts any
non-zero code; the tools promise exit code 1 on bad input, not a crash)."""
import subprocess
import sys

expected = int(sys.argv[1])
result = subprocess.run(sys.argv[2:])
if result.returncode != expected:
    sys.stderr.write("expect-exit: %s exited with %d, expected %d\n"
                     % (sys.argv[2], result.returncode, expected))
    sys.exit(1)

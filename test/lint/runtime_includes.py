#!/usr/bin/env python3
"""Checks that code outside runtime/ reaches the runtime only through its
public headers (ctest lint.runtime_includes):
- no file outside runtime/ includes a runtime file by a relative path;
- the programs (tools/) and the libraries they are made of (server/,
  loadgen/) include no internal runtime header ("backend/...",
  "sched/...", "exec/...", "artifact/...", "schema/..."), only "cellrun/...";
  tests and benchmarks may, through the CellRuntimeInternal target;
- the public headers include nothing from the runtime's internals, not the
  artifact's generated FlatBuffers code, and name neither the file format
  (cellpack::) nor a backend, the executor or its fault injection;
- nor do the programs and their libraries name the file format.
Prints every offending line and exits 1 if there is one.

  runtime_includes.py SOURCE_DIR"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1]).resolve()
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
internal = re.compile(r"^(backend|sched|exec|artifact|schema)/")
problems = []
format_name = re.compile(r"\bcellpack::")
internal_class = re.compile(r"\b(Executor|Backend|CpuBackend|CudaBackend|CpuTaskRunner|"
                            r"ThreadPool|PackedWeightCache|SlotPool|FaultInjector|"
                            r"FaultPoint|Scheduler)\b")
# Headers of the runtime that are not public, by name (a program that has
# one on its include path could include it by name alone).
internal_names = {path.name for path in (root / "runtime").rglob("*.h")
                  if "include" not in path.relative_to(root / "runtime").parts}


def lines(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = include.match(line)
        if match:
            yield number, match.group(1)


checked = 0
programs = {"tools", "server", "loadgen"}
for folder in ["tools", "server", "loadgen", "bench", "test", "examples", "compiler", "dialects"]:
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in {".h", ".cpp", ".cu", ".hpp"}:
            continue
        checked += 1
        for number, target in lines(path):
            where = f"{path.relative_to(root)}:{number}: \"{target}\""
            if target.startswith("runtime/"):
                problems.append(f"{where}: a runtime file by its path in the tree")
            elif target.startswith("../"):
                resolved = (path.parent / target).resolve()
                if str(resolved).startswith(str(root / "runtime") + "/"):
                    problems.append(f"{where}: a runtime file by a relative path")
            local = (path.parent / target).exists()
            if folder in programs and (internal.match(target) or
                                      (target in internal_names and not local)):
                problems.append(f"{where}: an internal runtime header in a program")
        if folder in programs:
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if format_name.search(line.split("//")[0]):
                    problems.append(f"{path.relative_to(root)}:{number}: names the "
                                    "artifact's file format (cellpack::) in a program")
for path in sorted((root / "runtime" / "include").rglob("*.h")):
    checked += 1
    for number, target in lines(path):
        if (target.startswith("../") or internal.match(target) or
                target == "cellpack_generated.h"):
            problems.append(f"{path.relative_to(root)}:{number}: \"{target}\": "
                            "a public header includes an internal one")
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = line.split("//")[0]
        if format_name.search(code) or internal_class.search(code):
            problems.append(f"{path.relative_to(root)}:{number}: a public header "
                            f"names the runtime's internals: {code.strip()}")
for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"{checked} files: the runtime is reached through its public headers only")

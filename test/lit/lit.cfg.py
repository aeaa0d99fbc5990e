# lit configuration for the cellc tests (dialect, importer, cellc, examples).
import os
import lit.formats
import lit.util

config.name = "cellc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test", ".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "tools", "lit.cfg.py", "lit.site.cfg.py.in"]

site_config = lit_config.params.get("cell_site_config")
if not site_config:
    lit_config.fatal("run through ctest, or pass --param cell_site_config=<build>/test/lit/lit.site.cfg.py")
exec(open(site_config).read())
config.test_exec_root = os.path.join(os.path.dirname(site_config), "out")

tool_dirs = [
    os.path.join(config.cell_tools_dir, "cellc"),
    os.path.join(config.cell_tools_dir, "cell-opt"),
    os.path.join(config.cell_tools_dir, "cellrun"),
    config.llvm_tools_dir,
]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", "")])
config.substitutions.append(
    ("%expect-exit", "%s %s" % (config.python_executable,
                                os.path.join(config.test_source_root, "tools", "expect-exit.py"))))
config.substitutions.append(("%examples", config.cell_examples_build_dir))
config.substitutions.append(("%srcroot", config.cell_source_dir))
config.substitutions.append(("%python", config.python_executable))

# cellc_add_artifact: compile a model manifest into a .cellpack at build
# time, again whenever the manifest or any ONNX file it names changes
# (cellc writes the files it read as a depfile):
#
#   cellc_add_artifact(<target> MANIFEST <model.yaml> OUTPUT <model.cellpack>
#                      [ONNX_DIR <dir>] [OPTIONS <cellc options>...]
#                      [DEPENDS <files or targets that make the ONNX files>...]
#                      [ALL])
#
# Relative paths are taken from the current source directory (MANIFEST,
# ONNX_DIR) and the current binary directory (OUTPUT). <target> is a custom
# target that builds the artifact (built by default with ALL).
# The compiler is the target cellc::cellc: in the cellc tree the build's own,
# from find_package(cellc CONFIG) the installed one.
function(cellc_add_artifact target)
  cmake_parse_arguments(ARG "ALL" "MANIFEST;OUTPUT;ONNX_DIR" "OPTIONS;DEPENDS"
                        ${ARGN})
  if(NOT ARG_MANIFEST OR NOT ARG_OUTPUT)
    message(FATAL_ERROR "cellc_add_artifact(${target}): MANIFEST and OUTPUT are required")
  endif()
  get_filename_component(manifest "${ARG_MANIFEST}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(output "${ARG_OUTPUT}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(onnx_dir)
  if(ARG_ONNX_DIR)
    get_filename_component(dir "${ARG_ONNX_DIR}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(onnx_dir --onnx-dir "${dir}")
  endif()
  file(RELATIVE_PATH name "${CMAKE_BINARY_DIR}" "${output}")
  add_custom_command(
    OUTPUT "${output}"
    COMMAND cellc::cellc "${manifest}" ${onnx_dir} -o "${output}"
            --depfile "${output}.d" --quiet ${ARG_OPTIONS}
    DEPENDS cellc::cellc "${manifest}" ${ARG_DEPENDS}
    DEPFILE "${output}.d"
    COMMENT "Compiling ${name} with cellc"
    VERBATIM)
  set(all)
  if(ARG_ALL)
    set(all ALL)
  endif()
  add_custom_target(${target} ${all} DEPENDS "${output}")
endfunction()

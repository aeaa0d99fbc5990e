# `cmake --install`: the runtime as a package another CMake project finds
# with find_package(cellrun CONFIG) and links as cellrun::runtime (static
# libraries) or cellrun::runtime_shared (libcellrun.so), the public headers
# under include/cellrun (they name neither the artifact's FlatBuffers schema
# nor a backend: both stay inside the library), and the programs built
# (cellc, cellrun) under bin/; find_package(cellc CONFIG) gives the compiler
# and cellc_add_artifact().
include(CMakePackageConfigHelpers)

# The runtime's libraries, lowest first; cellrun::runtime brings them all.
set(CELL_RUNTIME_LIBRARIES CellBase CellArtifact CellSlotPool CellCpuBackend
    CellDevice CellExecutor CellRequest CellGraph CellScheduler CellEngine)
if(CELL_ENABLE_CUDA)
  list(INSERT CELL_RUNTIME_LIBRARIES 5 CellCudaSlotLayout CellCudaBackend)
endif()
add_library(CellRuntime INTERFACE)
target_link_libraries(CellRuntime INTERFACE CellEngine)
set_target_properties(CellRuntime PROPERTIES EXPORT_NAME runtime)
add_library(cellrun::runtime ALIAS CellRuntime)
# The same as one shared library, libcellrun.so (cellrun::runtime_shared):
# the objects of every runtime library, with OpenBLAS and (CELL_ENABLE_CUDA)
# the CUDA runtime; a CUDA backend opens cuBLASLt from the CUDA toolkit when
# it is made (nothing else needs it).
add_library(CellRuntimeShared SHARED ${CELL_SOURCE_DIR}/runtime/RuntimeLibrary.cpp)
foreach(library ${CELL_RUNTIME_LIBRARIES})
  target_sources(CellRuntimeShared PRIVATE $<TARGET_OBJECTS:${library}>)
endforeach()
target_link_libraries(CellRuntimeShared PRIVATE ${CELL_OPENBLAS_STATIC}
  Threads::Threads)
if(CELL_ENABLE_CUDA)
  target_link_libraries(CellRuntimeShared PRIVATE CUDA::cudart_static
    ${CMAKE_DL_LIBS})
endif()
# OpenBLAS and the CUDA runtime stay private to the library: an application
# with its own BLAS or libcudart keeps its own, and so does the runtime.
target_link_options(CellRuntimeShared PRIVATE -Wl,--exclude-libs,ALL)
# What an application compiles against: the headers and what they include.
target_include_directories(CellRuntimeShared PUBLIC
  $<BUILD_INTERFACE:${CELL_SOURCE_DIR}/runtime/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(CellRuntimeShared PUBLIC nlohmann_json::nlohmann_json)
target_compile_definitions(CellRuntimeShared PRIVATE
  CELLRUN_VERSION="${PROJECT_VERSION}")
set_target_properties(CellRuntimeShared PROPERTIES OUTPUT_NAME cellrun
  EXPORT_NAME runtime_shared VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
add_library(cellrun::runtime_shared ALIAS CellRuntimeShared)

install(TARGETS CellRuntime CellRuntimeShared CellpackSchema
  ${CELL_RUNTIME_LIBRARIES} EXPORT cellrunTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/cellrun COMPONENT runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(DIRECTORY ${CELL_SOURCE_DIR}/runtime/include/cellrun
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT runtime)

# The CMake package <name> (lib/cmake/<name>): the targets exported as
# <name>Targets with the namespace <name>::, <name>Config.cmake from
# cmake/<name>Config.cmake.in, a version file, and the EXTRA files.
function(cell_install_package name component)
  cmake_parse_arguments(ARG "" "" "EXTRA" ${ARGN})
  set(dir ${CMAKE_INSTALL_LIBDIR}/cmake/${name})
  install(EXPORT ${name}Targets NAMESPACE ${name}:: DESTINATION ${dir}
    COMPONENT ${component})
  configure_package_config_file(${CELL_SOURCE_DIR}/cmake/${name}Config.cmake.in
    ${CELL_BINARY_DIR}/${name}Config.cmake INSTALL_DESTINATION ${dir})
  write_basic_package_version_file(${CELL_BINARY_DIR}/${name}ConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CELL_BINARY_DIR}/${name}Config.cmake
    ${CELL_BINARY_DIR}/${name}ConfigVersion.cmake ${ARG_EXTRA}
    DESTINATION ${dir} COMPONENT ${component})
endfunction()
cell_install_package(cellrun runtime)

if(TARGET cellrun)
  install(TARGETS cellrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    COMPONENT tools)
endif()
if(TARGET cellc)
  # find_package(cellc CONFIG): cellc::cellc and cellc_add_artifact().
  install(TARGETS cellc EXPORT cellcTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT compiler)
  cell_install_package(cellc compiler
    EXTRA ${CELL_SOURCE_DIR}/cmake/CellcAddArtifact.cmake)
endif()

# `cpack` (in the build directory): .deb packages of the runtime library
# (libcellrun-dev: static libraries, headers, CMake package), the cellrun
# tool and the cellc compiler, each with the Debian packages its binaries
# link found by dpkg-shlibdeps. The CUDA libraries (cuBLASLt, NVRTC) come
# with NVIDIA's toolkit, not from Debian: no package is named for them.
set(CPACK_PACKAGE_NAME cellrun)
set(CPACK_PACKAGE_VENDOR "cellc and cellrun")
set(CPACK_PACKAGE_CONTACT "cellc and cellrun developers <cellrun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "ahead-of-time compiler and cellular-batching runtime for RNN cells")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(CELL_ENABLE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
endif()
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libcellrun-dev)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libdevel)
# What an application linking the static libraries needs at its link time.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS
    "libflatbuffers-dev, nlohmann-json3-dev, libopenblas-pthread-dev")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME cellrun)
set(CPACK_DEBIAN_COMPILER_PACKAGE_NAME cellc)
set(CPACK_COMPONENTS_ALL runtime)
if(TARGET cellrun)
  list(APPEND CPACK_COMPONENTS_ALL tools)
endif()
if(TARGET cellc)
  list(APPEND CPACK_COMPONENTS_ALL compiler)
endif()
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "the cellrun runtime library: load a .cellpack and serve requests from C++")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "cellrun: run, serve (KServe v2 over HTTP and gRPC), bench and inspect .cellpack models")
set(CPACK_COMPONENT_COMPILER_DESCRIPTION
    "cellc: compiles ONNX RNN cells and a manifest into a .cellpack")
include(CPack)

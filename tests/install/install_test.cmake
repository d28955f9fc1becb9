# The install_tree test (tests/install/CMakeLists.txt). Arguments: BUILD_DIR, SOURCE_DIR, WORK_DIR (emptied),
# BUILD_BINARY (the build tree's clustersim), SCENARIO (copied beside nothing else and run from WORK_DIR/run).
cmake_minimum_required(VERSION 3.20)

function(fail what)
  message(FATAL_ERROR "install_tree: ${what}")
endfunction()

# run(NAME cmd...): runs with CLUSTERSIM_CATALOG_DIR unset, in WORK_DIR/run; NAME_rc, NAME_out, NAME_err.
function(run name)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CLUSTERSIM_CATALOG_DIR ${ARGN}
    WORKING_DIRECTORY ${WORK_DIR}/run RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${name}_rc "${rc}" PARENT_SCOPE)
  set(${name}_out "${out}" PARENT_SCOPE)
  set(${name}_err "${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/run)
set(prefix ${WORK_DIR}/prefix)
set(moved ${WORK_DIR}/moved)

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  fail("cmake --install failed (${rc}):\n${out}${err}")
endif()

# The installed catalog holds every file of the source tree's, byte for byte.
set(source_catalog ${SOURCE_DIR}/models/hardware/catalog)
file(GLOB_RECURSE source_files RELATIVE ${source_catalog} ${source_catalog}/*)
file(GLOB_RECURSE installed_files RELATIVE ${prefix}/share/clustersim/catalog ${prefix}/share/clustersim/catalog/*)
list(SORT source_files)
list(SORT installed_files)
if(NOT source_files STREQUAL installed_files)
  fail("installed catalog files differ from the source tree's:\n  source:    ${source_files}\n"
       "  installed: ${installed_files}")
endif()
foreach(f IN LISTS source_files)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${source_catalog}/${f}
    ${prefix}/share/clustersim/catalog/${f} RESULT_VARIABLE same)
  if(NOT same EQUAL 0)
    fail("installed catalog file ${f} differs from the source tree's")
  endif()
endforeach()

# The prefix is relocatable: move it, then run the installed binary from another directory on a copy of the
# demo scenario. Its report equals the build tree's binary's on the same copy.
file(RENAME ${prefix} ${moved})
file(COPY ${SCENARIO} DESTINATION ${WORK_DIR}/run)
get_filename_component(scenario_name ${SCENARIO} NAME)
run(installed ${moved}/bin/clustersim run ${scenario_name} -o demo.h5)
if(NOT installed_rc EQUAL 0)
  fail("installed clustersim run exited ${installed_rc}:\n${installed_out}${installed_err}")
endif()
if(NOT EXISTS ${WORK_DIR}/run/demo.h5)
  fail("installed clustersim run wrote no demo.h5")
endif()
file(RENAME ${WORK_DIR}/run/demo.h5 ${WORK_DIR}/run/installed.h5)
run(built ${BUILD_BINARY} run ${scenario_name} -o demo.h5)
if(NOT built_rc EQUAL 0)
  fail("build tree's clustersim run exited ${built_rc}:\n${built_out}${built_err}")
endif()
if(NOT installed_out STREQUAL built_out)
  fail("the installed and the build tree's clustersim print different reports:\n--- installed\n${installed_out}"
       "--- build tree\n${built_out}")
endif()

# It read the installed catalog, not the source tree's: a broken installed devices.toml is the error it reports.
file(APPEND ${moved}/share/clustersim/catalog/devices.toml "\n[this is not toml\n")
run(broken ${moved}/bin/clustersim catalog)
string(FIND "${broken_err}" "${moved}/share/clustersim/catalog/devices.toml" at)
if(NOT broken_rc EQUAL 65 OR at EQUAL -1)
  fail("with a broken installed devices.toml, `clustersim catalog` exited ${broken_rc} (expected 65 naming "
       "${moved}/share/clustersim/catalog/devices.toml):\n${broken_out}${broken_err}")
endif()
# CLUSTERSIM_CATALOG_DIR still comes first.
execute_process(COMMAND ${CMAKE_COMMAND} -E env CLUSTERSIM_CATALOG_DIR=${source_catalog}
  ${moved}/bin/clustersim catalog
  WORKING_DIRECTORY ${WORK_DIR}/run RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  fail("CLUSTERSIM_CATALOG_DIR did not override the installed catalog (exit ${rc}):\n${err}")
endif()

# The analysis package imports, from where the install put it, with Debian's Python.
file(GLOB_RECURSE init_files ${moved}/lib/*.py)
list(FILTER init_files INCLUDE REGEX "/clustersim_analysis/__init__\\.py$")
list(LENGTH init_files n)
if(NOT n EQUAL 1)
  fail("expected one installed clustersim_analysis/__init__.py under ${moved}/lib, found ${n}: ${init_files}")
endif()
get_filename_component(package_dir ${init_files} DIRECTORY)
get_filename_component(python_dir ${package_dir} DIRECTORY)
if(EXISTS /usr/bin/python3)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${python_dir} PYTHONDONTWRITEBYTECODE=1 MPLBACKEND=Agg
    /usr/bin/python3 -c
      "import clustersim_analysis as ca; print(ca.load_summary('${WORK_DIR}/run/installed.h5')['step_time_s'][0])"
    WORKING_DIRECTORY ${WORK_DIR}/run RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^[0-9]")
    fail("the installed clustersim_analysis did not load installed.h5 (exit ${rc}):\n${out}${err}")
  endif()
endif()
message(STATUS "install_tree: ok (${moved})")

# SPDX-License-Identifier: GPL-3.0-or-later
# The plugin SDK end to end (ctest sdk.out_of_tree_plugin): install the build into a fresh
# prefix, build plugins/template outside the tree against that install with
# find_package(NNStudio), and have the installed nnstudio-cli load it, list it beside the
# installed example plugins, and train a project that uses it.
#   cmake -DBUILD=<build dir> -DSOURCE=<source dir> -DWORK=<scratch dir> -P check_sdk.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}\n${out}${err}")
  endif()
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/data)
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
file(COPY ${SOURCE}/plugins/template/ DESTINATION ${WORK}/plugin)
run(${CMAKE_COMMAND} -S ${WORK}/plugin -B ${WORK}/plugin/build -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK}/prefix)
run(${CMAKE_COMMAND} --build ${WORK}/plugin/build)

# An empty data folder, so that no plugin of the user running the test is loaded.
set(env ${CMAKE_COMMAND} -E env XDG_DATA_HOME=${WORK}/data NNS_PLUGIN_PATH=${WORK}/plugin/build)
run(${env} ${WORK}/prefix/bin/nnstudio-cli plugins)
message(STATUS "${out}")
foreach(expected "learned_scale 0.1.0 .*learned_scale.so" "types: LearnedScale"
        "rmsnorm 1.0.0 .*prefix/lib[^ ]*/nnstudio/plugins/rmsnorm.so")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "nnstudio-cli plugins does not list '${expected}':\n${out}")
  endif()
endforeach()
if(out MATCHES "Failed:")
  message(FATAL_ERROR "a plugin failed to load:\n${out}")
endif()
run(${env} ${WORK}/prefix/bin/nnstudio-cli train ${SOURCE}/tests/sdk/learned_scale.nns --steps 20)
message(STATUS "${out}")
if(NOT out MATCHES "20 steps")
  message(FATAL_ERROR "training with the out-of-tree plugin did not run 20 steps:\n${out}")
endif()

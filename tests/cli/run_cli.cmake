# SPDX-License-Identifier: GPL-3.0-or-later
# Runs nnstudio-cli with ARGS (a ;-list) and checks its exit code and output:
#   cmake -DCLI=<path> -DARGS="example;--epochs;2" -DEXPECT_CODE=0 -DEXPECT_OUTPUT=<regex> -P run_cli.cmake
# ctest's own PASS_REGULAR_EXPRESSION ignores the exit code, and the code is part of the
# contract (2 for a bad command line).
# ENV, when set, is one NAME=VALUE for the program's environment.
if(ENV)
  set(run_with_env ${CMAKE_COMMAND} -E env ${ENV})
endif()
execute_process(COMMAND ${run_with_env} ${CLI} ${ARGS} RESULT_VARIABLE code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT code STREQUAL EXPECT_CODE)
  message(FATAL_ERROR "nnstudio-cli ${ARGS}: exit code ${code}, expected ${EXPECT_CODE}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "nnstudio-cli ${ARGS}: output does not match '${EXPECT_OUTPUT}':\n${out}${err}")
endif()

# SPDX-License-Identifier: GPL-3.0-or-later
# Runs the screenshot tests under a real X server (xvfb-run) when it is installed, else on
# Qt's offscreen platform. -DTESTS=<ui_tests> -DOUT=<folder for the PNGs>
find_program(XVFB_RUN xvfb-run)
set(ENV{NNS_SCREENSHOT_DIR} "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
if(XVFB_RUN)
  unset(ENV{QT_QPA_PLATFORM})
  set(command ${XVFB_RUN} -a -s "-screen 0 1920x1080x24" ${TESTS} --gtest_filter=Screenshot*)
else()
  set(ENV{QT_QPA_PLATFORM} offscreen)
  set(command ${TESTS} --gtest_filter=Screenshot*)
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "screenshot tests failed (exit code ${code})")
endif()
message(STATUS "screenshots in ${OUT}")

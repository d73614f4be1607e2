# SPDX-License-Identifier: GPL-3.0-or-later
# nnstudio_add_plugin(NAME SOURCES file.cpp ...): a plugin library NAME.so that links the
# engine and defines its entry point with NNS_PLUGIN (engine/plugin/plugin.h). Copy the .so
# into ~/.local/share/nnstudio/plugins (or a folder of NNS_PLUGIN_PATH) and NN Studio loads
# it at start.
function(nnstudio_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES")
  set(sources ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "nnstudio_add_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${sources})
  target_link_libraries(${name} PRIVATE NNStudio::engine)
  target_compile_features(${name} PRIVATE cxx_std_20)
  # The loader looks for NAME.so, not libNAME.so.
  set_target_properties(${name} PROPERTIES PREFIX "")
endfunction()

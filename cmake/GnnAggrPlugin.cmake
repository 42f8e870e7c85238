# gnn_add_aggr_plugin: an aggregation plug-in for gnn-train, built against
# the installed package (gnnConfig.cmake includes this file).
#
#   gnn_add_aggr_plugin(NAME
#                       SOURCES file.c ...    the plug-in's sources
#                       [NO_OPENMP])          do not link OpenMP
#
# makes the MODULE library target NAME, the file NAME.so (no "lib" prefix),
# compiled against gnn_aggr_plugin.h (gnn::aggr_plugin) with hidden
# visibility, so that only the two functions marked GNN_AGGR_PLUGIN_EXPORT
# are exported, and linked with OpenMP (found here, REQUIRED) and libm.
# Load it with `gnn-train --aggr-plugin NAME.so`.
function(gnn_add_aggr_plugin name)
  cmake_parse_arguments(P "NO_OPENMP" "" "SOURCES" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "gnn_add_aggr_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${P_SOURCES})
  target_link_libraries(${name} PRIVATE gnn::aggr_plugin)
  set_target_properties(${name} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden)
  if(NOT P_NO_OPENMP)
    find_package(OpenMP REQUIRED COMPONENTS C)
    target_link_libraries(${name} PRIVATE OpenMP::OpenMP_C)
  endif()
  if(UNIX)
    target_link_libraries(${name} PRIVATE m)
  endif()
endfunction()

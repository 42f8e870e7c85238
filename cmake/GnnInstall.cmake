# What `cmake --install` puts under the prefix (GNUInstallDirs layout):
#
#   bin/                         gnn-dataset, gnn-partition, gnn-train
#                                (install rules beside each command)
#   include/gnn/                 gnn_aggr_plugin.h, all a plug-in includes
#   lib/cmake/gnn/               the CMake package: find_package(gnn) gives
#                                the target gnn::aggr_plugin (the header's
#                                include directory) and gnn_add_aggr_plugin()
#   lib/pkgconfig/               gnn-aggr-plugin.pc: the header's cflags
#   share/gnn/examples/plugins/  the example plug-ins' sources, lse/ with
#                                a CMakeLists.txt that builds it against
#                                the installed package
#   share/gnn/python/            the gnn_pyg package (trainer/python/): models
#                                and graph files in PyTorch Geometric
#
# The package's version is the project's. A plug-in links against nothing
# of this project, so the package holds no library. The CMake package finds
# its files relative to where it is (the installed tree can be moved); the
# .pc file names the prefix.
include(CMakePackageConfigHelpers)
set(GNN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gnn)

install(TARGETS gnn_aggr_plugin EXPORT gnnTargets
        FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gnn
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gnn)
install(EXPORT gnnTargets NAMESPACE gnn:: DESTINATION ${GNN_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gnnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/gnnConfig.cmake
                              INSTALL_DESTINATION ${GNN_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the package, so only the same one fits.
# The plug-in ABI has its own version (GNN_AGGR_ABI_VERSION), checked when
# gnn-train loads a plug-in.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gnnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/gnnConfig.cmake ${PROJECT_BINARY_DIR}/gnnConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/GnnAggrPlugin.cmake
        DESTINATION ${GNN_INSTALL_CMAKEDIR})

# The .pc file names the prefix the install goes to, known only then
# (`cmake --install build --prefix P`): configured now with everything
# else, and with the prefix when installing.
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(GNN_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(GNN_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(GNN_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/gnn-aggr-plugin.pc.in
               ${PROJECT_BINARY_DIR}/pkgconfig/gnn-aggr-plugin.pc.in @ONLY)
install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/gnn-aggr-plugin.pc.in\"
                             \"${PROJECT_BINARY_DIR}/pkgconfig/gnn-aggr-plugin.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/gnn-aggr-plugin.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Templates for a plug-in of one's own: the sources by name (not the
# folders, which may hold a build of the example made in place).
set(_gnn_examples ${CMAKE_INSTALL_DATADIR}/gnn/examples/plugins)
install(FILES ${PROJECT_SOURCE_DIR}/kernels/plugins/lse/CMakeLists.txt
              ${PROJECT_SOURCE_DIR}/kernels/plugins/lse/README.md
              ${PROJECT_SOURCE_DIR}/kernels/plugins/lse/lse.c
              ${PROJECT_SOURCE_DIR}/kernels/plugins/lse/lse_cuda.cu
        DESTINATION ${_gnn_examples}/lse)
install(FILES ${PROJECT_SOURCE_DIR}/kernels/plugins/gatv2/README.md
              ${PROJECT_SOURCE_DIR}/kernels/plugins/gatv2/gatv2.c
              ${PROJECT_SOURCE_DIR}/kernels/plugins/gatv2/gatv2_cuda.cu
        DESTINATION ${_gnn_examples}/gatv2)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/trainer/python/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gnn/python
        PATTERN __pycache__ EXCLUDE PATTERN *.pyc EXCLUDE)

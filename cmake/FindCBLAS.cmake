# Finds a CBLAS (OpenBLAS from Debian's libopenblas-dev) and defines CBLAS::CBLAS.
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
find_library(CBLAS_LIBRARY NAMES openblas cblas)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CBLAS REQUIRED_VARS CBLAS_LIBRARY CBLAS_INCLUDE_DIR)
if(CBLAS_FOUND AND NOT TARGET CBLAS::CBLAS)
  add_library(CBLAS::CBLAS UNKNOWN IMPORTED)
  set_target_properties(CBLAS::CBLAS PROPERTIES IMPORTED_LOCATION ${CBLAS_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${CBLAS_INCLUDE_DIR})
endif()

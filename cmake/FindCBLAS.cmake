# Finds a CBLAS and defines CBLAS::CBLAS. Prefers Debian's OpenMP build of
# OpenBLAS (libopenblas-openmp-dev): it runs its threads in the same OpenMP
# pool as our kernels, whereas the pthread build keeps a second pool whose
# threads spin against OpenMP's on every GEMM (measured: most of a Cora
# epoch went to the two pools waiting for each other). The library's
# directory is put in the run path so the OpenMP build is the one loaded
# whatever Debian's alternatives point at.
set(_cblas_arch_dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
find_library(CBLAS_LIBRARY NAMES openblas
             PATHS ${_cblas_arch_dir}/openblas-openmp NO_DEFAULT_PATH)
if(CBLAS_LIBRARY)
  find_path(CBLAS_INCLUDE_DIR cblas.h
            PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
  set(CBLAS_OPENMP ON)
else()
  find_library(CBLAS_LIBRARY NAMES openblas cblas)
  find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
  set(CBLAS_OPENMP OFF)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CBLAS REQUIRED_VARS CBLAS_LIBRARY CBLAS_INCLUDE_DIR)
if(CBLAS_FOUND AND NOT TARGET CBLAS::CBLAS)
  add_library(CBLAS::CBLAS UNKNOWN IMPORTED)
  set_target_properties(CBLAS::CBLAS PROPERTIES IMPORTED_LOCATION ${CBLAS_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${CBLAS_INCLUDE_DIR})
  if(NOT CBLAS_OPENMP)
    message(WARNING "OpenBLAS without OpenMP (${CBLAS_LIBRARY}): install libopenblas-openmp-dev; "
                    "the pthread build's threads compete with the kernels' OpenMP threads")
  endif()
endif()

# Finds METIS (Debian's libmetis-dev: 5.1 with 32-bit idx_t).
# Defines the imported target METIS::METIS and METIS_IDXTYPEWIDTH.
find_path(METIS_INCLUDE_DIR metis.h)
find_library(METIS_LIBRARY metis)
if(METIS_INCLUDE_DIR)
  file(STRINGS ${METIS_INCLUDE_DIR}/metis.h _w REGEX "^#define IDXTYPEWIDTH")
  string(REGEX REPLACE ".*IDXTYPEWIDTH +([0-9]+).*" "\\1" METIS_IDXTYPEWIDTH "${_w}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(METIS REQUIRED_VARS METIS_LIBRARY METIS_INCLUDE_DIR)
if(METIS_FOUND AND NOT TARGET METIS::METIS)
  add_library(METIS::METIS UNKNOWN IMPORTED)
  set_target_properties(METIS::METIS PROPERTIES IMPORTED_LOCATION ${METIS_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${METIS_INCLUDE_DIR})
endif()

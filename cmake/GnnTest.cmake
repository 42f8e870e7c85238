# One helper for every test of the project.
#
#   gnn_add_test(NAME
#                SOURCES file.c ...       test program sources (CMocka)
#                LIBS lib ...             libraries it links
#                [ARGS arg ...]           command-line arguments
#                [LABELS label ...]       `fast` unless `slow` is given
#                [RANKS 2 4]              run under mpirun with each rank count
#                [TIMEOUT seconds])
#
# Every test gets the sanitizer environment (ASan/LSan/UBSan options and the
# suppressions for third-party leaks) and treats exit code 77 as SKIPPED, so
# a CUDA test without a device is reported as skipped, never as passed.
set(GNN_LSAN_SUPP ${PROJECT_SOURCE_DIR}/tests/lsan.supp)
# Under ASan every allocation records its call stack with the fast
# (frame-pointer) unwinder, several times faster than the default DWARF
# unwinder in this suite. Third-party frames then stop at the first library
# built without frame pointers, which still names the library for the
# suppressions as long as it stays loaded: the sanitizer build preloads
# tests/common/nodlclose.c, which keeps Open MPI's components mapped until
# exit (verify_asan_link_order=0 lets the preload come before the ASan
# runtime).
set(GNN_NODLCLOSE ${CMAKE_BINARY_DIR}/tests/libgnn_nodlclose.so)
set(GNN_TEST_ENV
    "ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:abort_on_error=0:detect_odr_violation=0:fast_unwind_on_malloc=1:verify_asan_link_order=0"
    "LSAN_OPTIONS=suppressions=${GNN_LSAN_SUPP}:print_suppressions=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
    "OMPI_ALLOW_RUN_AS_ROOT=1"
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    "OMPI_MCA_rmaps_base_oversubscribe=1"
    "OMPI_MCA_btl_vader_single_copy_mechanism=none"
    # Each program's MPI_Init in 0.02 s instead of 0.33 s (hundreds of runs
    # a suite): ob1 named (the point-to-point layer chosen anyway, without
    # the probe of the others), and a program started without mpiexec
    # starts no daemon (gnn-train spawns no processes).
    "OMPI_MCA_pml=ob1"
    "OMPI_MCA_ess_singleton_isolated=1"
    # Keep Open MPI components loaded at exit so their leaks have a name.
    "OMPI_MCA_mca_base_component_disable_dlclose=1"
    "GNN_SHARED_DATASETS=${PROJECT_SOURCE_DIR}/../shared/datasets"
    # ctest -j runs several multi-threaded programs on the same cores:
    # OpenMP workers that spin at barriers would take each other's time
    # slices (measured: a mini-batch run 2.5x slower beside two busy cores).
    "OMP_WAIT_POLICY=passive")
if(GNN_SANITIZE MATCHES "address")
  list(APPEND GNN_TEST_ENV "LD_PRELOAD=${GNN_NODLCLOSE}")
endif()

function(gnn_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;ARGS;LABELS;RANKS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  if(GNN_SANITIZE)
    # Tests that time their commands or train for accuracy scale to the
    # sanitizer build's speed (tests/trainer/test_train_dist.c).
    target_compile_definitions(${name} PRIVATE GNN_TEST_SANITIZED=1)
  endif()
  target_link_libraries(${name} PRIVATE gnn_cmocka ${T_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  set(labels ${T_LABELS})
  if(NOT "slow" IN_LIST labels)
    list(APPEND labels fast)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(tests)
  if(T_RANKS)
    foreach(np IN LISTS T_RANKS)
      add_test(NAME ${name}_np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
                       ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
      list(APPEND tests ${name}_np${np})
    endforeach()
    list(APPEND labels mpi)
  else()
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
    list(APPEND tests ${name})
  endif()
  set_tests_properties(${tests} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${GNN_TEST_ENV}"
                       WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endfunction()

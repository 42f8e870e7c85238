# Fuzz targets for every parser of outside data.
#
#   gnn_add_fuzz(NAME SOURCES file.c ... LIBS lib ... CORPUS dir)
#
# Each target's source defines
#   int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
# Two programs are built from it:
#   - NAME_replay (always, any compiler): runs the entry point on every file
#     of the corpus directory; registered with CTest (label `fuzz`), so the
#     corpus is replayed in every test run, under the sanitizers too;
#   - NAME (with -DGNN_FUZZ=ON and clang): the libFuzzer binary, run by hand:
#       CC=clang cmake -S . -B build-fuzz -DGNN_FUZZ=ON -DGNN_CUDA=OFF \
#             -DGNN_SANITIZE=address,undefined
#       cmake --build build-fuzz --target NAME
#       build-fuzz/tests/NAME tests/fuzz/corpus/NAME -max_total_time=60
option(GNN_FUZZ "Build libFuzzer targets (needs clang as the C compiler)" OFF)
if(GNN_FUZZ)
  # Coverage feedback from the libraries too, not only the target file.
  add_compile_options($<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link>)
endif()

function(gnn_add_fuzz name)
  cmake_parse_arguments(F "" "CORPUS" "SOURCES;LIBS" ${ARGN})
  add_executable(${name}_replay ${F_SOURCES} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.c)
  target_link_libraries(${name}_replay PRIVATE ${F_LIBS})
  target_include_directories(${name}_replay PRIVATE ${PROJECT_SOURCE_DIR})
  add_test(NAME ${name}_replay COMMAND ${name}_replay ${F_CORPUS})
  set_tests_properties(${name}_replay PROPERTIES LABELS "fast;fuzz" TIMEOUT 300
                       ENVIRONMENT "${GNN_TEST_ENV}")
  if(GNN_FUZZ)
    if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
      message(FATAL_ERROR "GNN_FUZZ=ON needs clang (CC=clang)")
    endif()
    add_executable(${name} ${F_SOURCES})
    target_link_libraries(${name} PRIVATE ${F_LIBS})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  endif()
endfunction()

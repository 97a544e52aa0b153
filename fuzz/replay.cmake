# fuzz/replay.cmake: the fuzz targets of fuzz/ in the main build, without
# libFuzzer (included from the root CMakeLists.txt when testing):
#
#   fuzz_replay_<t>   fuzz_<t>.c with replay_main.c: runs the target once on
#                     each seed (fuzz/corpus/<t>/) and regression input
#                     (fuzz/regressions/<t>/), under whatever sanitizers the
#                     build has (ASan + UBSan in the Asan build CI runs);
#                     ctest fuzz_replay_<t>. Known defects: fuzz/known.txt.
#   fuzz_smoke        tools/fuzz.sh: builds the libFuzzer targets with clang
#                     (in <build>/fuzz-clang) and fuzzes each for
#                     OC_FUZZ_SECONDS (a cache variable, 20 s: CI's short run);
#                     skipped (77) where clang or libFuzzer is missing.
file(STRINGS ${PROJECT_SOURCE_DIR}/fuzz/targets.txt OC_FUZZ_TARGETS REGEX "^[a-z_]+$")
foreach(t ${OC_FUZZ_TARGETS})
  add_executable(fuzz_replay_${t} ${PROJECT_SOURCE_DIR}/fuzz/fuzz_${t}.c
    ${PROJECT_SOURCE_DIR}/fuzz/fuzz_check.c ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
  target_include_directories(fuzz_replay_${t} PRIVATE ${PROJECT_SOURCE_DIR}/fuzz)
  target_link_libraries(fuzz_replay_${t} PRIVATE ocsim_reports ocsim_core)
  if(t MATCHES "^ckpt_")
    target_link_libraries(fuzz_replay_${t} PRIVATE ocsim_exec_core)
  endif()
  add_test(NAME fuzz_replay_${t}
    COMMAND fuzz_replay_${t} --known ${PROJECT_SOURCE_DIR}/fuzz/known.txt
            ${PROJECT_SOURCE_DIR}/fuzz/corpus/${t} ${PROJECT_SOURCE_DIR}/fuzz/regressions/${t})
  # max_allocation_size_mb: an input that makes a reader ask for more than
  # 1 GiB is a crash, as libFuzzer's -rss_limit_mb makes it (regressions/
  # compare_csv/oom-*: a stage number sized an array); the Asan build only.
  set_tests_properties(fuzz_replay_${t} PROPERTIES
    ENVIRONMENT "OCSIM_DATA_DIR=${PROJECT_SOURCE_DIR};ASAN_OPTIONS=max_allocation_size_mb=1024")
endforeach()

set(OC_FUZZ_SECONDS 20 CACHE STRING "seconds ctest's fuzz_smoke fuzzes each target")
add_test(NAME fuzz_smoke COMMAND bash ${PROJECT_SOURCE_DIR}/tools/fuzz.sh ${OC_FUZZ_SECONDS})
# COST: ctest -j2 starts it first, beside the other long one-process test
# (exec_cuda_emu, tests/CMakeLists.txt), rather than last and alone.
set_tests_properties(fuzz_smoke PROPERTIES
  ENVIRONMENT "OCSIM_FUZZ_BUILD=${CMAKE_BINARY_DIR}/fuzz-clang"
  SKIP_RETURN_CODE 77 TIMEOUT 1800 COST 150)

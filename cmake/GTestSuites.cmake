# qsd_gtest_suites(TARGET PREFIX <prefix> LABELS <labels...>)
#
# Registers one ctest test per GoogleTest suite of TARGET (`<prefix>Suite`, run with
# --gtest_filter=Suite.*), where gtest_discover_tests registers one per TEST(). Starting a test
# program costs more than most of its tests: in the sanitizer build 0.13 s for each of 314 unit
# tests (69 s of test time), against 9.5 s for all of them in one process. A suite keeps ctest's
# parallelism and names the failing test in its output.
#
# The suites are listed after each link of TARGET (its --gtest_list_tests), as
# gtest_discover_tests does, so a new TEST() needs no re-configure.
set(QSD_GTEST_SUITES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/gtest_suites_list.cmake)

function(qsd_gtest_suites target)
  cmake_parse_arguments(arg "" "PREFIX" "LABELS" ${ARGN})
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${target}> -DOUT=${tests_file} -DPREFIX=${arg_PREFIX}
            "-DLABELS=${arg_LABELS}" -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR} -P ${QSD_GTEST_SUITES_SCRIPT}
    BYPRODUCTS ${tests_file}
    VERBATIM)
  # ctest reads this on every run: the suites once the program is built, a failing placeholder
  # before that.
  file(WRITE ${include_file}
       "if(EXISTS \"${tests_file}\")\n  include(\"${tests_file}\")\nelse()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()

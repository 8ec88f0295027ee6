# Run at build time by qsd_gtest_suites (GTestSuites.cmake): lists the suites of the GoogleTest
# program EXE and writes OUT, a ctest file with one test per suite.
# -DEXE=... -DOUT=... -DPREFIX=... -DLABELS=a;b -DWORKDIR=...
execute_process(COMMAND ${EXE} --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result TIMEOUT 60)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${result}):\n${listing}${errors}")
endif()

# Suites start in the first column ("Suite.", "Prefix/Suite.", "Suite/0.  # TypeParam = ...");
# their tests are indented under them.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
set(count 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.")
    set(suite "${CMAKE_MATCH_1}")
    set(name "${PREFIX}${suite}")
    string(APPEND content
           "add_test([==[${name}]==] [==[${EXE}]==] [==[--gtest_filter=${suite}.*]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKDIR}]==]"
           " LABELS [==[${LABELS}]==])\n")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${EXE} lists no test suite:\n${listing}")
endif()
file(WRITE "${OUT}" "${content}")

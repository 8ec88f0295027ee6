# Shared build settings: warnings, sanitizers and the feature summary.

add_library(qsd_warnings INTERFACE)
target_compile_options(qsd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
# GCC 12 reports false maybe-uninitialized positives inside nlohmann/json's iterators.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(qsd_warnings INTERFACE -Wno-maybe-uninitialized)
  # In a unity build GCC takes the files a unity source includes for headers, and warns that a
  # type of one file uses that file's anonymous namespace, as it would for a type in a header.
  # Evaluated for the target that links qsd_warnings: only its unity builds lose the warning.
  target_compile_options(qsd_warnings INTERFACE
    $<$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>:-Wno-subobject-linkage>)
endif()
if(WERROR)
  target_compile_options(qsd_warnings INTERFACE -Werror)
endif()

if(SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# qsd_optimise_when_sanitized(<target>...): compiles the code of the programs (the daemon, the
# protocol library, qsctl) with -O1 in an unoptimised sanitizer build, as ASan's documentation
# advises. The integration tests spend most of their time in a sanitized qsd: at -O0 it takes
# 3-5 times the CPU (test_slow_client 79 s, at -O1 17 s). The tests' own code stays at -O0,
# which compiles in half the time; sanitizer reports still name every frame.
function(qsd_optimise_when_sanitized)
  if(SANITIZE AND NOT CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo|MinSizeRel)$")
    foreach(target ${ARGN})
      target_compile_options(${target} PRIVATE -O1)
    endforeach()
  endif()
endfunction()

# qsd_no_pie_when_sanitized(<target>...): links these programs at a fixed address in a sanitizer
# build. A sanitized position-independent program gives the dynamic loader about a million
# pointers to relocate at every start (ASan's descriptor of every global and string literal, and
# with WITH_FUZZ the coverage table of every branch in qsd-core): about a tenth of a second of
# CPU per start, and the tests start qsd, qsctl and the unit tests well over a thousand times.
# The objects stay position-independent; only the link differs. Qt programs are left as they
# are (Qt asks for position-independent code).
function(qsd_no_pie_when_sanitized)
  if(SANITIZE)
    foreach(target ${ARGN})
      target_link_options(${target} PRIVATE -no-pie)
    endforeach()
  endif()
endfunction()

function(qsd_feature_summary)
  message(STATUS "")
  message(STATUS "qsd ${PROJECT_VERSION} feature summary")
  foreach(opt WITH_NM WITH_UPOWER WITH_PIPEWIRE WITH_TRAY WITH_WAYLAND WITH_MPRIS WITH_NOTIFICATIONS WITH_BLUETOOTH WITH_QML WITH_FUZZ SANITIZE WERROR UNITY_TESTS SIZE_OPTIMIZED_BACKENDS QSCTL_JQ BUILD_TESTING)
    if(${opt})
      message(STATUS "  ${opt}: ON")
    else()
      message(STATUS "  ${opt}: OFF")
    endif()
  endforeach()
  message(STATUS "  DEBUG_INFO: ${DEBUG_INFO}")
  message(STATUS "")
endfunction()

# qsd_install_gzipped(<source> <destination> [<installed name>]): installs <source> compressed
# with gzip -9n, the way distributions ship man pages and changelogs (-n: no name or time stamp
# in the header, so the bytes depend on the source alone). The .gz is made by the default build.
find_program(QSD_GZIP gzip REQUIRED)
function(qsd_install_gzipped source destination)
  cmake_path(ABSOLUTE_PATH source)
  cmake_path(GET source FILENAME name)
  if(ARGC GREATER 2)
    set(name ${ARGV2})
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/gz)
  add_custom_command(
    OUTPUT ${dir}/${name}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${CMAKE_COMMAND} -E copy ${source} ${dir}/${name}
    COMMAND ${QSD_GZIP} -9nf ${dir}/${name}
    DEPENDS ${source}
    COMMENT "Compressing ${name}"
    VERBATIM)
  string(MAKE_C_IDENTIFIER "${destination}/${name}" id)
  add_custom_target(gzip_${id} ALL DEPENDS ${dir}/${name}.gz)
  install(FILES ${dir}/${name}.gz DESTINATION ${destination})
endfunction()

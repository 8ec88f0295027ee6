# Shared build settings: warnings, sanitizers and the feature summary.

add_library(qsd_warnings INTERFACE)
target_compile_options(qsd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
# GCC 12 reports false maybe-uninitialized positives inside nlohmann/json's iterators.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(qsd_warnings INTERFACE -Wno-maybe-uninitialized)
endif()
if(WERROR)
  target_compile_options(qsd_warnings INTERFACE -Werror)
endif()

if(SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

function(qsd_feature_summary)
  message(STATUS "")
  message(STATUS "qsd ${PROJECT_VERSION} feature summary")
  foreach(opt WITH_NM WITH_UPOWER WITH_PIPEWIRE WITH_TRAY WITH_WAYLAND WITH_QML WITH_FUZZ SANITIZE WERROR SIZE_OPTIMIZED_BACKENDS QSCTL_JQ BUILD_TESTING)
    if(${opt})
      message(STATUS "  ${opt}: ON")
    else()
      message(STATUS "  ${opt}: OFF")
    endif()
  endforeach()
  message(STATUS "")
endfunction()

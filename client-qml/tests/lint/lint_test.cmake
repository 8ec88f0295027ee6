# qmllint against the Qsd module: good.qml and the example bar pass, typo.qml fails on its typo.
#   cmake -DQMLLINT=... -DIMPORT_DIR=... -DLINT_DIR=... -DBAR_DIR=... -P lint_test.cmake
function(lint out_code out_text)
  execute_process(COMMAND ${QMLLINT} -I ${IMPORT_DIR} ${ARGN}
                  RESULT_VARIABLE code OUTPUT_VARIABLE text ERROR_VARIABLE text)
  set(${out_code} ${code} PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

lint(code text ${LINT_DIR}/good.qml)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "qmllint rejected good.qml (${code}):\n${text}")
endif()

lint(code text ${LINT_DIR}/typo.qml)
if(code EQUAL 0 OR NOT text MATCHES "\"conected\" not found")
  message(FATAL_ERROR "qmllint did not report the typo in typo.qml (${code}):\n${text}")
endif()

file(GLOB bar ${BAR_DIR}/*.qml)
lint(code text ${bar})
if(NOT code EQUAL 0)
  message(FATAL_ERROR "qmllint rejected the example bar (${code}):\n${text}")
endif()
message(STATUS "qmllint: good.qml and the example bar pass; the typo is reported")

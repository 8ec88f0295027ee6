# Writes OUT: C++ QML types generated from the API description (protocol/api/*.json, the source
# of rpc.discover), so that qmllint knows every enum value and event topic and reports a typo:
#   one singleton per fragment, named after its domain (network.json -> QsdNetwork, core.json ->
#   QsdCore), with one constant object per string enum schema (the schema's name without the
#   domain prefix, first letter lowered: NetworkDeviceState -> QsdNetwork.deviceState) holding
#   each value as a string property (QsdNetwork.deviceState.connected === "connected"), and an
#   `events` object with each event topic (QsdNetwork.events.connectionFailed ===
#   "network.connectionFailed").
# A value that is not an identifier is spelled with `_` for every other character, and a leading
# `_` when it starts with a digit ("2.4GHz" -> _2_4GHz).
#   cmake -DOUT=... "-DFRAGMENTS=a.json;b.json" -P gen_api_types.cmake

cmake_minimum_required(VERSION 3.25)

set(cxx_keywords alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
  char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue
  co_await co_return co_yield decltype default delete do double dynamic_cast else enum explicit
  export extern false float for friend goto if inline int long mutable namespace new noexcept not
  not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
  return short signed sizeof static static_assert static_cast struct switch template this
  thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
  wchar_t while xor xor_eq signals slots emit foreach)

# A QML/C++ property name for a string value.
function(property_name value out)
  string(REGEX REPLACE "[^A-Za-z0-9_]" "_" name "${value}")
  if(name MATCHES "^[0-9]")
    set(name "_${name}")
  endif()
  if(name MATCHES "^[A-Z]")
    string(SUBSTRING "${name}" 0 1 first)
    string(SUBSTRING "${name}" 1 -1 rest)
    string(TOLOWER "${first}" first)
    set(name "${first}${rest}")
  endif()
  if(name IN_LIST cxx_keywords)
    set(name "${name}_")
  endif()
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

# A C++ string literal's content for a JSON string (quotes and backslashes escaped).
function(cxx_text value out)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" " " value "${value}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# A class holding string constants: name, list of values (as one ;-separated CMake list is unsafe
# for values, they come in as an escaped-separator string "v1<SEP>v2").
function(constants_class class doc values out)
  string(REPLACE "<SEP>" ";" values "${values}")
  set(body "/// ${doc}\nclass ${class}: public QObject {\n\tQ_OBJECT\n\tQML_ANONYMOUS\n")
  set(getters "")
  set(i 0)
  foreach(value IN LISTS values)
    property_name("${value}" name)
    cxx_text("${value}" text)
    string(APPEND body "\tQ_PROPERTY(QString ${name} READ v${i} CONSTANT)\n")
    string(APPEND getters "\t[[nodiscard]] QString v${i}() const { return QStringLiteral(\"${text}\"); }\n")
    math(EXPR i "${i} + 1")
  endforeach()
  string(APPEND body "\npublic:\n\tusing QObject::QObject;\n${getters}};\n\n")
  set(${out} "${body}" PARENT_SCOPE)
endfunction()

# Adds a constants class for the string enum at the JSON path ARGN of the current fragment,
# named after `schema` (its class) and shown to people as `label` ("" = the schema).
macro(collect_enum schema label)
  set(enum_path ${ARGN})
  string(JSON enum_type ERROR_VARIABLE no_enum TYPE "${json}" ${enum_path} enum)
  set(values "")
  set(all_strings FALSE)
  if(NOT no_enum AND enum_type STREQUAL "ARRAY")
    string(JSON value_count LENGTH "${json}" ${enum_path} enum)
    # An inline enum of one value (a constant tag) is not worth a type.
    if(value_count GREATER 1 OR (value_count EQUAL 1 AND label STREQUAL ""))
      set(all_strings TRUE)
      math(EXPR value_last "${value_count} - 1")
      foreach(v RANGE ${value_last})
        string(JSON value_type TYPE "${json}" ${enum_path} enum ${v})
        if(NOT value_type STREQUAL "STRING")
          set(all_strings FALSE)
          break()
        endif()
        string(JSON value GET "${json}" ${enum_path} enum ${v})
        if(values STREQUAL "")
          set(values "${value}")
        else()
          string(APPEND values "<SEP>${value}")
        endif()
      endforeach()
    endif()
  endif()
  if(all_strings)
    # NetworkDeviceState -> deviceState; a schema without the prefix keeps its whole name.
    set(name "${schema}")
    string(LENGTH "${Domain}" prefix_len)
    string(SUBSTRING "${schema}" 0 ${prefix_len} prefix)
    string(SUBSTRING "${schema}" ${prefix_len} -1 remainder)
    if(prefix STREQUAL Domain AND remainder MATCHES "^[A-Z]")
      set(name "${remainder}")
    endif()
    string(SUBSTRING "${name}" 0 1 first)
    string(SUBSTRING "${name}" 1 -1 rest)
    string(TOLOWER "${first}" first)
    set(name "${first}${rest}")
    if(name IN_LIST used_names OR name STREQUAL "events")
      string(SUBSTRING "${schema}" 0 1 first)
      string(SUBSTRING "${schema}" 1 -1 rest)
      string(TOLOWER "${first}" first)
      set(name "${first}${rest}")
    endif()
    if(NOT name IN_LIST used_names)
      list(APPEND used_names "${name}")
      string(JSON description ERROR_VARIABLE no_description GET "${json}" ${enum_path} description)
      if(no_description)
        set(description "")
      endif()
      cxx_text("${description}" description)
      if(label STREQUAL "")
        set(label "${schema}")
      endif()
      constants_class("${schema}Values" "${label}: ${description}" "${values}" class_text)
      string(APPEND classes "${class_text}")
      string(APPEND members "\t/// ${label}\n\tQ_PROPERTY(qsd::qml::api::${schema}Values* ${name} READ get_${name} CONSTANT)\n")
      string(APPEND accessors "\t[[nodiscard]] ${schema}Values* get_${name}() const { return this->m_${name}; }\n")
      string(APPEND fields "\t${schema}Values* m_${name} = new ${schema}Values(this);\n")
    endif()
  endif()
endmacro()

set(out_text "// Generated from protocol/api/*.json by client-qml/gen_api_types.cmake. Do not edit.
#pragma once

#include <qobject.h>
#include <qqmlintegration.h>
#include <qstring.h>

namespace qsd::qml::api {

")

foreach(fragment IN LISTS FRAGMENTS)
  file(READ "${fragment}" json)
  get_filename_component(stem "${fragment}" NAME_WE)
  # The domain: the fragment's x-tree root ("network"), else its file name ("core").
  set(domain "${stem}")
  string(JSON has_tree ERROR_VARIABLE no_tree TYPE "${json}" x-tree)
  if(NOT no_tree AND has_tree STREQUAL "OBJECT")
    string(JSON tree_len LENGTH "${json}" x-tree)
    if(tree_len GREATER 0)
      string(JSON domain MEMBER "${json}" x-tree 0)
    endif()
  endif()
  string(SUBSTRING "${domain}" 0 1 first)
  string(SUBSTRING "${domain}" 1 -1 rest)
  string(TOUPPER "${first}" first)
  set(Domain "${first}${rest}")
  set(singleton "Qsd${Domain}")

  set(members "")      # Q_PROPERTY lines of the singleton
  set(accessors "")    # getters and members
  set(classes "")
  set(used_names "")

  # String enums among the schemas.
  string(JSON schemas_type ERROR_VARIABLE no_schemas TYPE "${json}" components schemas)
  set(schema_count 0)
  if(NOT no_schemas AND schemas_type STREQUAL "OBJECT")
    string(JSON schema_count LENGTH "${json}" components schemas)
  endif()
  if(schema_count GREATER 0)
    math(EXPR last "${schema_count} - 1")
    foreach(i RANGE ${last})
      string(JSON schema MEMBER "${json}" components schemas ${i})
      # The schema itself: a string enum.
      collect_enum("${schema}" "" components schemas ${schema})
      # Its properties' inline string enums (NetworkDevice.type -> QsdNetwork.deviceType).
      string(JSON props_type ERROR_VARIABLE no_props TYPE "${json}" components schemas ${schema} properties)
      if(NOT no_props AND props_type STREQUAL "OBJECT")
        string(JSON prop_count LENGTH "${json}" components schemas ${schema} properties)
        if(prop_count GREATER 0)
          math(EXPR prop_last "${prop_count} - 1")
          foreach(p RANGE ${prop_last})
            string(JSON prop MEMBER "${json}" components schemas ${schema} properties ${p})
            string(SUBSTRING "${prop}" 0 1 first)
            string(SUBSTRING "${prop}" 1 -1 rest)
            string(TOUPPER "${first}" first)
            collect_enum("${schema}${first}${rest}" "${schema}.${prop}" components schemas ${schema} properties ${prop})
          endforeach()
        endif()
      endif()
    endforeach()
  endif()

  # Event topics.
  string(JSON events_type ERROR_VARIABLE no_events TYPE "${json}" x-events)
  set(event_count 0)
  if(NOT no_events AND events_type STREQUAL "ARRAY")
    string(JSON event_count LENGTH "${json}" x-events)
  endif()
  set(topics "")
  if(event_count GREATER 0)
    math(EXPR last "${event_count} - 1")
    foreach(i RANGE ${last})
      string(JSON topic GET "${json}" x-events ${i} name)
      if(topics STREQUAL "")
        set(topics "${topic}")
      else()
        string(APPEND topics "<SEP>${topic}")
      endif()
    endforeach()
  endif()
  # Property names of topics drop the "domain." part.
  set(event_class "${singleton}Events")
  set(body "/// The event topics of ${stem}.json (QsdEvents.topics).\nclass ${event_class}: public QObject {\n\tQ_OBJECT\n\tQML_ANONYMOUS\n")
  set(getters "")
  string(REPLACE "<SEP>" ";" topic_list "${topics}")
  set(i 0)
  foreach(topic IN LISTS topic_list)
    string(REGEX REPLACE "^[^.]*\\." "" short "${topic}")
    property_name("${short}" name)
    cxx_text("${topic}" text)
    string(APPEND body "\tQ_PROPERTY(QString ${name} READ v${i} CONSTANT)\n")
    string(APPEND getters "\t[[nodiscard]] QString v${i}() const { return QStringLiteral(\"${text}\"); }\n")
    math(EXPR i "${i} + 1")
  endforeach()
  string(APPEND body "\npublic:\n\tusing QObject::QObject;\n${getters}};\n\n")
  string(APPEND classes "${body}")
  string(APPEND members "\t/// Event topics\n\tQ_PROPERTY(qsd::qml::api::${event_class}* events READ get_events CONSTANT)\n")
  string(APPEND accessors "\t[[nodiscard]] ${event_class}* get_events() const { return this->m_events; }\n")
  string(APPEND fields "\t${event_class}* m_events = new ${event_class}(this);\n")

  string(APPEND out_text "${classes}/// Constants of ${stem}.json: its string enums and event topics.
class ${singleton}: public QObject {
\tQ_OBJECT
\tQML_ELEMENT
\tQML_SINGLETON
${members}
public:
\texplicit ${singleton}(QObject* parent = nullptr): QObject(parent) {}
${accessors}
private:
${fields}};

")
  set(fields "")
endforeach()

string(APPEND out_text "} // namespace qsd::qml::api\n")
file(WRITE "${OUT}.tmp" "${out_text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)

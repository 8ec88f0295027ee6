# Writes OUT: C++ QML types generated from the API description (protocol/api/*.json, the source
# of rpc.discover), so that qmllint knows every enum value and event topic and reports a typo:
#   one singleton per fragment, named after its domain (network.json -> QsdNetwork, core.json ->
#   QsdCore), with one constant object per string enum schema (the schema's name without the
#   domain prefix, first letter lowered: NetworkDeviceState -> QsdNetwork.deviceState) holding
#   each value as a string property (QsdNetwork.deviceState.connected === "connected"), and an
#   `events` object with each event topic (QsdNetwork.events.connectionFailed ===
#   "network.connectionFailed").
# An enum is a schema's or a property's `enum` of strings, or the string enums of its `anyOf` /
# `oneOf` (a tray item's status: three values or any other string -> QsdTray.itemStatus). A
# method parameter's string enum that is no type above gets one too, named after the verb and
# the parameter (tray.scroll orientation -> QsdTray.scrollOrientation; the verb alone when it
# ends with the parameter's name: tray.menuEvent event -> QsdTray.menuEvent).
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

# The string values of the enum at the JSON path ARGN of the current fragment, joined with <SEP>:
# its own `enum`, or the union of the string enums of its `anyOf`/`oneOf` members (an enum that
# also admits other strings, such as a tray item's status). ok is FALSE when there is no enum of
# strings there.
function(enum_strings out_values out_ok)
  set(values "")
  set(ok FALSE)
  string(JSON enum_type ERROR_VARIABLE no_enum TYPE "${json}" ${ARGN} enum)
  if(NOT no_enum AND enum_type STREQUAL "ARRAY")
    string(JSON count LENGTH "${json}" ${ARGN} enum)
    if(count GREATER 0)
      set(ok TRUE)
      math(EXPR last "${count} - 1")
      foreach(v RANGE ${last})
        string(JSON value_type TYPE "${json}" ${ARGN} enum ${v})
        if(NOT value_type STREQUAL "STRING")
          set(ok FALSE)
          break()
        endif()
        string(JSON value GET "${json}" ${ARGN} enum ${v})
        if(values STREQUAL "")
          set(values "${value}")
        else()
          string(APPEND values "<SEP>${value}")
        endif()
      endforeach()
    endif()
  else()
    foreach(keyword anyOf oneOf)
      string(JSON members_type ERROR_VARIABLE no_members TYPE "${json}" ${ARGN} ${keyword})
      if(no_members OR NOT members_type STREQUAL "ARRAY")
        continue()
      endif()
      string(JSON count LENGTH "${json}" ${ARGN} ${keyword})
      if(count EQUAL 0)
        continue()
      endif()
      math(EXPR last "${count} - 1")
      foreach(m RANGE ${last})
        enum_strings(member_values member_ok ${ARGN} ${keyword} ${m})
        if(member_ok)
          set(ok TRUE)
          if(values STREQUAL "")
            set(values "${member_values}")
          else()
            string(APPEND values "<SEP>${member_values}")
          endif()
        endif()
      endforeach()
    endforeach()
  endif()
  set(${out_values} "${values}" PARENT_SCOPE)
  set(${out_ok} ${ok} PARENT_SCOPE)
endfunction()

# Adds a constants class for the string enum at the JSON path ARGN of the current fragment,
# named after `schema` (its class) and shown to people as `label` ("" = the schema). `wanted` is
# the singleton property's name, or "" for the schema's name without the domain prefix.
macro(collect_enum schema label wanted)
  set(enum_path ${ARGN})
  enum_strings(values all_strings ${enum_path})
  if(all_strings)
    # An inline enum of one value (a constant tag) is not worth a type.
    string(REPLACE "<SEP>" ";" value_list "${values}")
    list(LENGTH value_list value_count)
    if(value_count LESS 2 AND NOT label STREQUAL "")
      set(all_strings FALSE)
    endif()
  endif()
  if(all_strings)
    if(NOT "${wanted}" STREQUAL "")
      set(name "${wanted}")
    else()
      # NetworkDeviceState -> deviceState; a schema without the prefix keeps its whole name.
      set(name "${schema}")
      string(LENGTH "${Domain}" prefix_len)
      string(SUBSTRING "${schema}" 0 ${prefix_len} prefix)
      string(SUBSTRING "${schema}" ${prefix_len} -1 remainder)
      if(prefix STREQUAL Domain AND remainder MATCHES "^[A-Z]")
        set(name "${remainder}")
      endif()
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
      list(APPEND value_sets "${values}")
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

# Whether the values (<SEP>-joined) share two or more values with an enum already generated for
# this fragment: a parameter that takes that type (with aliases, or without its "unknown") needs
# no constants of its own (power.setProfile's profile is QsdPower.profile).
function(covers_generated values out)
  string(REPLACE "<SEP>" ";" mine "${values}")
  set(result FALSE)
  foreach(known IN LISTS value_sets)
    string(REPLACE "<SEP>" ";" theirs "${known}")
    set(shared 0)
    foreach(v IN LISTS theirs)
      if(v IN_LIST mine)
        math(EXPR shared "${shared} + 1")
      endif()
    endforeach()
    if(shared GREATER 1)
      set(result TRUE)
      break()
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

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
  set(value_sets "")   # the values of each enum generated so far (<SEP>-joined)

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
      collect_enum("${schema}" "" "" components schemas ${schema})
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
            collect_enum("${schema}${first}${rest}" "${schema}.${prop}" "" components schemas ${schema} properties ${prop})
          endforeach()
        endif()
      endif()
    endforeach()
  endif()

  # String enums of method parameters that are not one of the types above (tray.scroll's
  # orientation -> QsdTray.scrollOrientation; tray.menuEvent's event -> QsdTray.menuEvent, the
  # verb alone when it ends with the parameter's name).
  string(JSON methods_type ERROR_VARIABLE no_methods TYPE "${json}" methods)
  set(method_count 0)
  if(NOT no_methods AND methods_type STREQUAL "ARRAY")
    string(JSON method_count LENGTH "${json}" methods)
  endif()
  if(method_count GREATER 0)
    math(EXPR last "${method_count} - 1")
    foreach(i RANGE ${last})
      string(JSON method GET "${json}" methods ${i} name)
      string(REGEX REPLACE "^[^.]*\\." "" verb "${method}")
      string(JSON params_type ERROR_VARIABLE no_params TYPE "${json}" methods ${i} params)
      if(no_params OR NOT params_type STREQUAL "ARRAY")
        continue()
      endif()
      string(JSON param_count LENGTH "${json}" methods ${i} params)
      if(param_count EQUAL 0)
        continue()
      endif()
      math(EXPR param_last "${param_count} - 1")
      foreach(p RANGE ${param_last})
        string(JSON param GET "${json}" methods ${i} params ${p} name)
        enum_strings(param_values param_ok methods ${i} params ${p} schema)
        if(NOT param_ok)
          continue()
        endif()
        covers_generated("${param_values}" known)
        if(known)
          continue()
        endif()
        string(SUBSTRING "${param}" 0 1 first)
        string(SUBSTRING "${param}" 1 -1 rest)
        string(TOUPPER "${first}" first)
        set(Param "${first}${rest}")
        string(SUBSTRING "${verb}" 0 1 first)
        string(SUBSTRING "${verb}" 1 -1 rest)
        string(TOUPPER "${first}" first)
        set(Verb "${first}${rest}")
        if(verb MATCHES "${Param}$")
          set(wanted "${verb}")
        else()
          set(wanted "${verb}${Param}")
        endif()
        collect_enum("${Domain}${Verb}${Param}Param" "${method} ${param}" "${wanted}" methods ${i} params ${p} schema)
      endforeach()
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

# SPDX-License-Identifier: Apache-2.0
# Folders are libraries: every lib/<folder> is one static library built by
# railgate_library(), its sources listed, its dependencies declared, its folder
# its public include directory (a library sees only the headers of what it
# links). railgate_forbid_links() keeps the CNI's closure free of the agent's.

# railgate_library(<name> [AGENT_ONLY] SOURCES <file>... [PUBLIC <dep>...] [PRIVATE <dep>...])
# AGENT_ONLY: only the node agent (and tests) may link it: railgate_forbid_links
# fails the configure of a forbidden target that reaches it.
function(railgate_library name)
  cmake_parse_arguments(L "AGENT_ONLY" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  if(L_UNPARSED_ARGUMENTS OR NOT L_SOURCES)
    message(FATAL_ERROR "railgate_library(${name}): SOURCES, then PUBLIC and PRIVATE deps "
                        "(unparsed: ${L_UNPARSED_ARGUMENTS})")
  endif()
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  set_property(TARGET ${name} PROPERTY RAILGATE_AGENT_ONLY ${L_AGENT_ONLY})
  # tests/fuzz instruments every one of them
  set_property(GLOBAL APPEND PROPERTY RAILGATE_LIBRARIES ${name})
endfunction()

# What no forbidden target may link, by target or library name or path: gRPC
# core, gpr, abseil, the C++ runtime, libcurl, libmicrohttpd, hwloc.
set(RAILGATE_FORBIDDEN_LINKS "grpc|gpr|absl|stdc\\+\\+|curl|CURL|microhttpd|MHD|hwloc|HWLOC"
    CACHE INTERNAL "")

# railgate_forbid_links(<target>...): the configure fails when a target's link
# closure (what it links, and what those link, PRIVATE deps of static libraries
# included) reaches an AGENT_ONLY library or a name that matches
# RAILGATE_FORBIDDEN_LINKS. Call it after the last target_link_libraries.
function(railgate_forbid_links)
  foreach(head ${ARGN})
    if(NOT TARGET ${head})
      message(FATAL_ERROR "railgate_forbid_links: no target ${head}")
    endif()
    _railgate_forbid_links_of(${head})
  endforeach()
endfunction()

# one target's closure, breadth first; parent_<dep> remembers how each was reached
function(_railgate_forbid_links_of head)
  set(todo ${head})
  set(seen)
  while(todo)
    list(POP_FRONT todo t)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.+)>$" "\\1" t "${t}") # a static lib's PRIVATE deps
    if(t MATCHES "^::@" OR t IN_LIST seen) # CMP0079's directory markers
      continue()
    endif()
    list(APPEND seen "${t}")
    set(why)
    if(NOT t STREQUAL head AND t MATCHES "${RAILGATE_FORBIDDEN_LINKS}")
      set(why "${t} (gRPC, the C++ runtime, libcurl, libmicrohttpd and hwloc are the node agent's)")
    elseif(TARGET "${t}")
      get_target_property(type ${t} TYPE)
      # custom properties on INTERFACE libraries need CMake 3.19
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(agent ${t} RAILGATE_AGENT_ONLY)
        if(agent)
          set(why "agent-only ${t}")
        endif()
      endif()
    endif()
    if(why)
      # the path that reaches it, from head
      set(path "${t}")
      set(p "${t}")
      while(p AND NOT p STREQUAL head)
        string(MAKE_C_IDENTIFIER "${p}" id)
        set(p "${parent_${id}}")
        string(PREPEND path "${p} -> ")
      endwhile()
      message(FATAL_ERROR "railgate_forbid_links: ${head} must not link ${why}; "
                          "it does through ${path}")
    endif()
    if(NOT TARGET "${t}")
      continue() # a library name or path, or an imported target of another directory
    endif()
    set(deps)
    if(NOT type STREQUAL "INTERFACE_LIBRARY") # LINK_LIBRARIES: PUBLIC and PRIVATE
      get_target_property(deps ${t} LINK_LIBRARIES)
    endif()
    get_target_property(iface ${t} INTERFACE_LINK_LIBRARIES)
    foreach(d ${deps} ${iface})
      if(NOT d)
        continue()
      endif()
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.+)>$" "\\1" d "${d}")
      string(MAKE_C_IDENTIFIER "${d}" id)
      if(NOT DEFINED parent_${id})
        set(parent_${id} "${t}")
      endif()
      list(APPEND todo "${d}")
    endforeach()
  endwhile()
endfunction()

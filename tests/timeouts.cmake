# SPDX-License-Identifier: Apache-2.0
# Read by ctest, not by cmake: ctest includes it (TEST_INCLUDE_FILES, see
# CMakeLists.txt) before the tests of this directory are declared, and
# multiplies every TIMEOUT they are given by RAILGATE_TEST_WAIT_SCALE
# (rounded up; 1 to 1000), the factor by which the tests' own waits grow on
# a slow machine (tests/lib/waitscale.h): under QEMU/TCG (tests/vm sets 10)
# a test takes 8 to 16 times as long, and its ctest deadline grows with it.
# ctest has no timeout factor of its own, and --timeout sets only the
# default of tests without one: here set_tests_properties is wrapped.
set(_railgate_scale "$ENV{RAILGATE_TEST_WAIT_SCALE}")
if(_railgate_scale MATCHES "^[0-9]+([.][0-9]+)?$")
  string(REGEX REPLACE "[.].*" "" _railgate_int "${_railgate_scale}")
  if(NOT _railgate_scale MATCHES "^[0-9]+([.]0*)?$")
    math(EXPR _railgate_int "${_railgate_int} + 1")
  endif()
  if(_railgate_int GREATER 1 AND _railgate_int LESS_EQUAL 1000)
    set(RAILGATE_TIMEOUT_SCALE ${_railgate_int})
    # each argument passed on as it came (bracket-quoted: a list value stays
    # one argument), the number after TIMEOUT multiplied
    function(set_tests_properties)
      set(_code "_set_tests_properties(")
      set(_next FALSE)
      math(EXPR _last "${ARGC} - 1")
      foreach(_i RANGE ${_last})
        set(_a "${ARGV${_i}}")
        if(_next AND _a MATCHES "^[0-9]+$")
          math(EXPR _a "${_a} * ${RAILGATE_TIMEOUT_SCALE}")
        endif()
        set(_next FALSE)
        if(_a STREQUAL "TIMEOUT")
          set(_next TRUE)
        endif()
        string(APPEND _code " [==[${_a}]==]")
      endforeach()
      cmake_language(EVAL CODE "${_code})")
    endfunction()
  endif()
endif()

# student_copy.cmake — the tutorials' exercises, for the grader and the student build.
#
# An exercise is a region of a library source (autograd/ layers/ vit/ datasets/, the .cpp files
# directly in them) or of a chapter program (tutorials/NN_slug/main.cpp):
#     // [exercise:NAME]
#     ...the reference solution: whole statements...
#     // [/exercise:NAME]
# Included by the top-level CMakeLists.txt before the modules are defined, this script
#   - finds every exercise: PATCHGRAD_EXERCISE_NAMES and, parallel to it, PATCHGRAD_EXERCISE_FILES
#     (repo-relative paths), and PATCHGRAD_EXERCISE_SOURCES (each file once). The grader
#     (tutorials/CMakeLists.txt, target `grade`) runs the tests tagged [ex:NAME] for each;
#   - with PATCHGRAD_STUDENT=ON, creates student/<path> for each such file unless it already
#     exists (never overwriting a student's work), with every region's body replaced by a stub
#     that throws std::logic_error, and defines patchgrad_use_student_copies(target), which
#     makes a target compile the student copies instead of the originals.
# The default build compiles the originals: the reference solutions.

set(PATCHGRAD_EXERCISE_NAMES "")
set(PATCHGRAD_EXERCISE_FILES "")
set(PATCHGRAD_EXERCISE_SOURCES "")

file(GLOB _pg_exercise_candidates
     ${CMAKE_SOURCE_DIR}/autograd/*.cpp ${CMAKE_SOURCE_DIR}/layers/*.cpp ${CMAKE_SOURCE_DIR}/vit/*.cpp
     ${CMAKE_SOURCE_DIR}/datasets/*.cpp ${CMAKE_SOURCE_DIR}/tutorials/*/main.cpp)
file(GLOB _pg_exercise_headers
     ${CMAKE_SOURCE_DIR}/autograd/*.h ${CMAKE_SOURCE_DIR}/layers/*.h ${CMAKE_SOURCE_DIR}/vit/*.h
     ${CMAKE_SOURCE_DIR}/datasets/*.h)

# Headers cannot hold exercises: a student copy of a header would not be the one included.
foreach(_pg_file ${_pg_exercise_headers})
  file(STRINGS ${_pg_file} _pg_lines REGEX "// \\[/?exercise:")
  if(_pg_lines)
    file(RELATIVE_PATH _pg_rel ${CMAKE_SOURCE_DIR} ${_pg_file})
    message(FATAL_ERROR "${_pg_rel}: exercise markers belong in .cpp files (a student copy of a header "
                        "would not be the one included); move the exercise into a .cpp")
  endif()
endforeach()

foreach(_pg_file ${_pg_exercise_candidates})
  file(STRINGS ${_pg_file} _pg_lines REGEX "// \\[/?exercise:")
  if(NOT _pg_lines)
    continue()
  endif()
  file(RELATIVE_PATH _pg_rel ${CMAKE_SOURCE_DIR} ${_pg_file})
  set(_pg_open "")
  foreach(_pg_line ${_pg_lines})
    # (Two patterns: CMake leaves CMAKE_MATCH_<n> stale for a group that matches nothing.)
    if(_pg_line MATCHES "^[ \t]*// \\[exercise:([a-z0-9-]+)\\][ \t]*$")
      set(_pg_closing FALSE)
    elseif(_pg_line MATCHES "^[ \t]*// \\[/exercise:([a-z0-9-]+)\\][ \t]*$")
      set(_pg_closing TRUE)
    else()
      message(FATAL_ERROR "${_pg_rel}: malformed exercise marker \"${_pg_line}\": expected a line holding only "
                          "`// [exercise:NAME]` or `// [/exercise:NAME]`, NAME of a-z, 0-9 and '-'")
    endif()
    set(_pg_name ${CMAKE_MATCH_1})
    if(NOT _pg_closing)
      if(NOT _pg_open STREQUAL "")
        message(FATAL_ERROR "${_pg_rel}: exercise '${_pg_name}' starts inside exercise '${_pg_open}' "
                            "(close it first with `// [/exercise:${_pg_open}]`)")
      endif()
      list(FIND PATCHGRAD_EXERCISE_NAMES ${_pg_name} _pg_seen)
      if(NOT _pg_seen EQUAL -1)
        list(GET PATCHGRAD_EXERCISE_FILES ${_pg_seen} _pg_other)
        message(FATAL_ERROR "${_pg_rel}: exercise '${_pg_name}' is already defined in ${_pg_other}; "
                            "exercise names must be unique (they are the Catch2 tag [ex:NAME])")
      endif()
      set(_pg_open ${_pg_name})
      list(APPEND PATCHGRAD_EXERCISE_NAMES ${_pg_name})
      list(APPEND PATCHGRAD_EXERCISE_FILES ${_pg_rel})
    else()
      if(NOT _pg_name STREQUAL _pg_open)
        message(FATAL_ERROR "${_pg_rel}: `// [/exercise:${_pg_name}]` closes an exercise that is not open "
                            "(the open one is '${_pg_open}')")
      endif()
      set(_pg_open "")
    endif()
  endforeach()
  if(NOT _pg_open STREQUAL "")
    message(FATAL_ERROR "${_pg_rel}: exercise '${_pg_open}' is never closed (expected `// [/exercise:${_pg_open}]`)")
  endif()
  list(APPEND PATCHGRAD_EXERCISE_SOURCES ${_pg_rel})
  # Renaming or removing an exercise changes the grader's list: re-run CMake when these change.
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_pg_file})
endforeach()

# _patchgrad_write_student_copy(REL): writes student/REL, the original with every exercise
# body replaced by a stub. Works on the whole text with string(FIND/SUBSTRING) so that the
# code's semicolons and brackets pass through untouched.
function(_patchgrad_write_student_copy rel)
  file(READ ${CMAKE_SOURCE_DIR}/${rel} rest)
  file(GLOB readmes ${CMAKE_SOURCE_DIR}/tutorials/*/README.md)
  set(out "// Student copy of ${rel}, made by the PATCHGRAD_STUDENT build. Each exercise region below\n")
  string(APPEND out "// throws until you write it; `cmake --build <build dir> --target grade` grades it. To start an\n")
  string(APPEND out "// exercise over, delete this file and re-run cmake (it copies ${rel} again).\n")
  string(APPEND out "#include <stdexcept>  // std::logic_error, thrown by the exercise stubs\n")
  while(TRUE)
    string(REGEX MATCH "(^|\n)([ \t]*// \\[exercise:([a-z0-9-]+)\\])[ \t]*\n" marker "${rest}")
    if(marker STREQUAL "")
      break()
    endif()
    set(name "${CMAKE_MATCH_3}")
    # The indentation, cut from the marker line (a group matching nothing leaves CMAKE_MATCH stale).
    string(FIND "${CMAKE_MATCH_2}" "//" slashes)
    string(SUBSTRING "${CMAKE_MATCH_2}" 0 ${slashes} indent)
    string(FIND "${rest}" "${marker}" pos)
    string(LENGTH "${marker}" len)
    math(EXPR head_len "${pos} + ${len}")
    string(SUBSTRING "${rest}" 0 ${head_len} head)
    string(SUBSTRING "${rest}" ${head_len} -1 after)
    string(FIND "${after}" "// [/exercise:${name}]" close)
    string(SUBSTRING "${after}" 0 ${close} body)
    string(FIND "${body}" "\n" nl REVERSE)
    math(EXPR close_line "${nl} + 1")
    string(SUBSTRING "${after}" ${close_line} -1 rest)
    # Point the student at the chapter that sets the exercise.
    set(where "tutorials/README.md")
    foreach(readme ${readmes})
      file(READ ${readme} text)
      string(FIND "${text}" "${name}" found)
      if(NOT found EQUAL -1)
        file(RELATIVE_PATH where ${CMAKE_SOURCE_DIR} ${readme})
        break()
      endif()
    endforeach()
    string(APPEND out "${head}"
           "${indent}// TODO(exercise ${name}): write this part; the task is in ${where}, section Exercises.\n"
           "${indent}throw std::logic_error(\"exercise ${name}: not implemented yet (student/${rel})\");\n")
  endwhile()
  string(APPEND out "${rest}")
  file(WRITE ${CMAKE_SOURCE_DIR}/student/${rel}.tmp "${out}")
  file(RENAME ${CMAKE_SOURCE_DIR}/student/${rel}.tmp ${CMAKE_SOURCE_DIR}/student/${rel})
endfunction()

if(PATCHGRAD_STUDENT)
  set(_pg_created "")
  set(_pg_kept "")
  foreach(_pg_rel ${PATCHGRAD_EXERCISE_SOURCES})
    if(EXISTS ${CMAKE_SOURCE_DIR}/student/${_pg_rel})
      list(APPEND _pg_kept student/${_pg_rel})
      # An exercise added to the original after the copy was made has no stub in the copy.
      file(READ ${CMAKE_SOURCE_DIR}/student/${_pg_rel} _pg_copy)
      set(_pg_i 0)
      foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
        list(GET PATCHGRAD_EXERCISE_FILES ${_pg_i} _pg_file)
        math(EXPR _pg_i "${_pg_i} + 1")
        string(FIND "${_pg_copy}" "// [exercise:${_pg_name}]" _pg_at)
        if(_pg_file STREQUAL _pg_rel AND _pg_at EQUAL -1)
          message(WARNING "student/${_pg_rel} has no region for exercise '${_pg_name}' (added to ${_pg_rel} after "
                          "your copy was made): it grades the reference code there. Delete student/${_pg_rel} "
                          "and re-run cmake to get a fresh copy (your changes in it are lost).")
        endif()
      endforeach()
    else()
      _patchgrad_write_student_copy(${_pg_rel})
      list(APPEND _pg_created student/${_pg_rel})
    endif()
  endforeach()
  list(LENGTH PATCHGRAD_EXERCISE_NAMES _pg_count)
  message(STATUS "PATCHGRAD_STUDENT: ${_pg_count} exercises in ${CMAKE_SOURCE_DIR}/student/")
  if(_pg_created)
    string(REPLACE ";" ", " _pg_list "${_pg_created}")
    message(STATUS "PATCHGRAD_STUDENT: created ${_pg_list}")
  endif()
  if(_pg_kept)
    string(REPLACE ";" ", " _pg_list "${_pg_kept}")
    message(STATUS "PATCHGRAD_STUDENT: kept your ${_pg_list} (delete a file and re-run cmake to start it over)")
  endif()
endif()

# patchgrad_use_student_copies(TARGET): in the student build, TARGET compiles student/<path>
# instead of each of its sources that holds exercises, with the original's folder on the
# include path so the copy's `#include "ops.h"` still resolves. The stubs leave variables
# unused, so those files build without -Werror and unused-variable warnings.
function(patchgrad_use_student_copies target)
  if(NOT PATCHGRAD_STUDENT)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  set(replaced "")
  foreach(source ${sources})
    get_filename_component(absolute ${source} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${absolute})
    if(rel IN_LIST PATCHGRAD_EXERCISE_SOURCES)
      set(copy ${CMAKE_SOURCE_DIR}/student/${rel})
      list(APPEND replaced ${copy})
      get_filename_component(original_dir ${absolute} DIRECTORY)
      target_include_directories(${target} PRIVATE ${original_dir})
      set_source_files_properties(${copy} PROPERTIES COMPILE_OPTIONS "-Wno-error;-Wno-unused")
    else()
      list(APPEND replaced ${source})
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES ${replaced})
endfunction()

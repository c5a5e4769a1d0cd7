# student_copy.cmake — the tutorials' exercises, for the grader and the student build.
#
# An exercise is a region of a library source (autograd/ layers/ vit/ datasets/, the .cpp files
# in them, their job folders and those folders' subfolders) or of a chapter program (tutorials/NN_slug/main.cpp):
#     // [exercise:NAME]
#     ...the reference solution: whole statements...
#     // [/exercise:NAME]
# Included by the top-level CMakeLists.txt before the modules are defined, this script
#   - finds every exercise: PATCHGRAD_EXERCISE_NAMES and, parallel to it, PATCHGRAD_EXERCISE_FILES
#     (repo-relative paths), and PATCHGRAD_EXERCISE_SOURCES (each file once); the chapter that
#     sets exercise NAME (the tutorials/NN_slug/README.md naming its test tag [ex:NAME]) is
#     PATCHGRAD_EXERCISE_CHAPTER_<NAME>;
#   - resolves PATCHGRAD_EXERCISES (exercise names and chapter folders, or `all`) into
#     PATCHGRAD_STUDENT_EXERCISES and the files holding them, PATCHGRAD_STUDENT_SOURCES. The
#     grader (tutorials/CMakeLists.txt, target `grade`) runs the tests tagged [ex:NAME] of the
#     selected exercises in the student build, of all of them otherwise;
#   - with PATCHGRAD_STUDENT=ON, creates student/<path> for each file with a selected exercise,
#     in which the selected regions' bodies are replaced by a stub that throws std::logic_error
#     (the other regions keep the reference code), and brings existing copies in line with the
#     selection without touching what a student wrote (_patchgrad_sync_student_copy); defines
#     patchgrad_use_student_copies(target), which makes a target compile the student copies
#     instead of the originals.
# The default build compiles the originals: the reference solutions. The test
# tests/tutorials/student_copy_test.cmake runs this script in `cmake -P` mode on a fixture tree.

# The repository's root: patchgrad's source tree, also when another project adds it with
# add_subdirectory or FetchContent (CMAKE_SOURCE_DIR is then that project's); in script mode
# (handout.sh, the tests) the working directory.
if(DEFINED patchgrad_SOURCE_DIR)
  set(_pg_root ${patchgrad_SOURCE_DIR})
else()
  set(_pg_root ${CMAKE_SOURCE_DIR})
endif()

# A handout (tutorials/scripts/handout.sh) names its exercises in tutorials/handout-exercises.txt:
# they are the default selection there, the one `grade` grades.
set(_pg_default_selection "all")
if(EXISTS ${_pg_root}/tutorials/handout-exercises.txt)
  file(READ ${_pg_root}/tutorials/handout-exercises.txt _pg_default_selection)
  string(STRIP "${_pg_default_selection}" _pg_default_selection)
endif()
# The stubs leave parameters, variables and helpers unused until the student writes the code:
# no unused warnings where they stand, in a handout's sources themselves and in the student
# build's copies (patchgrad_use_student_copies below).
set(_pg_stub_warnings -Wno-unused -Wno-unused-parameter)
if(EXISTS ${_pg_root}/tutorials/handout-exercises.txt AND NOT CMAKE_SCRIPT_MODE_FILE)
  add_compile_options(${_pg_stub_warnings})
endif()
set(PATCHGRAD_EXERCISES "${_pg_default_selection}" CACHE STRING
    "The exercises to stub (student build) and to grade: exercise names and chapter folders (04_core_ops or 04), or all")
set(PATCHGRAD_EXERCISE_NAMES "")
set(PATCHGRAD_EXERCISE_FILES "")
set(PATCHGRAD_EXERCISE_SOURCES "")

# (The library folders, their job folders autograd/ops/, vit/train/, ... and the subfolders of
# those, autograd/cpu/threads/, ...)
set(_pg_modules autograd layers vit datasets)
set(_pg_exercise_candidates "")
set(_pg_exercise_headers "")
foreach(_pg_module ${_pg_modules})
  file(GLOB _pg_found ${_pg_root}/${_pg_module}/*.cpp ${_pg_root}/${_pg_module}/*/*.cpp ${_pg_root}/${_pg_module}/*/*/*.cpp)
  list(APPEND _pg_exercise_candidates ${_pg_found})
  file(GLOB _pg_found ${_pg_root}/${_pg_module}/*.h ${_pg_root}/${_pg_module}/*/*.h ${_pg_root}/${_pg_module}/*/*/*.h)
  list(APPEND _pg_exercise_headers ${_pg_found})
endforeach()
file(GLOB _pg_found ${_pg_root}/tutorials/*/main.cpp)
list(APPEND _pg_exercise_candidates ${_pg_found})

# Headers cannot hold exercises: a student copy of a header would not be the one included.
foreach(_pg_file ${_pg_exercise_headers})
  file(STRINGS ${_pg_file} _pg_lines REGEX "// \\[/?exercise:")
  if(_pg_lines)
    file(RELATIVE_PATH _pg_rel ${_pg_root} ${_pg_file})
    message(FATAL_ERROR "${_pg_rel}: exercise markers belong in .cpp files (a student copy of a header "
                        "would not be the one included); move the exercise into a .cpp")
  endif()
endforeach()

foreach(_pg_file ${_pg_exercise_candidates})
  file(STRINGS ${_pg_file} _pg_lines REGEX "// \\[/?exercise:")
  if(NOT _pg_lines)
    continue()
  endif()
  file(RELATIVE_PATH _pg_rel ${_pg_root} ${_pg_file})
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
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    set_property(DIRECTORY ${_pg_root} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_pg_file})
  endif()
endforeach()

# The chapter of each exercise: the chapter README that names its test tag (its Exercises
# section says "Graded by [ex:NAME]"); "" when no chapter does.
file(GLOB _pg_readmes ${_pg_root}/tutorials/[0-9][0-9]_*/README.md)
foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
  set(PATCHGRAD_EXERCISE_CHAPTER_${_pg_name} "")
endforeach()
foreach(_pg_readme ${_pg_readmes})
  file(READ ${_pg_readme} _pg_text)
  get_filename_component(_pg_dir ${_pg_readme} DIRECTORY)
  get_filename_component(_pg_chapter ${_pg_dir} NAME)
  foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
    string(FIND "${_pg_text}" "[ex:${_pg_name}]" _pg_at)
    if(NOT _pg_at EQUAL -1 AND PATCHGRAD_EXERCISE_CHAPTER_${_pg_name} STREQUAL "")
      set(PATCHGRAD_EXERCISE_CHAPTER_${_pg_name} ${_pg_chapter})
    endif()
  endforeach()
endforeach()

# PATCHGRAD_EXERCISES -> PATCHGRAD_STUDENT_EXERCISES, in the order of PATCHGRAD_EXERCISE_NAMES.
# An entry is `all`, an exercise name, or a chapter: its folder (04_core_ops) or number (04).
string(REPLACE "," ";" _pg_picks "${PATCHGRAD_EXERCISES}")
if(PATCHGRAD_STUDENT AND NOT _pg_picks)
  message(FATAL_ERROR "PATCHGRAD_EXERCISES is empty: name the exercises or chapters to stub, or `all`")
endif()
set(_pg_selected "")
foreach(_pg_pick ${_pg_picks})
  string(STRIP "${_pg_pick}" _pg_pick)
  set(_pg_matched FALSE)
  foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
    set(_pg_chapter "${PATCHGRAD_EXERCISE_CHAPTER_${_pg_name}}")
    string(REGEX MATCH "^[0-9]+" _pg_number "${_pg_chapter}")
    if(_pg_pick STREQUAL "all" OR _pg_pick STREQUAL _pg_name
       OR (NOT _pg_chapter STREQUAL "" AND (_pg_pick STREQUAL _pg_chapter OR _pg_pick STREQUAL _pg_number)))
      list(APPEND _pg_selected ${_pg_name})
      set(_pg_matched TRUE)
    endif()
  endforeach()
  if(NOT _pg_matched)
    set(_pg_chapters "")
    foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
      list(APPEND _pg_chapters ${PATCHGRAD_EXERCISE_CHAPTER_${_pg_name}})
    endforeach()
    list(REMOVE_DUPLICATES _pg_chapters)
    string(REPLACE ";" ", " _pg_names_text "${PATCHGRAD_EXERCISE_NAMES}")
    string(REPLACE ";" ", " _pg_chapters_text "${_pg_chapters}")
    message(FATAL_ERROR "PATCHGRAD_EXERCISES: '${_pg_pick}' is neither an exercise nor a chapter with exercises "
                        "(nor `all`). Exercises: ${_pg_names_text}. Chapters: ${_pg_chapters_text}.")
  endif()
endforeach()
set(PATCHGRAD_STUDENT_EXERCISES "")
set(PATCHGRAD_STUDENT_SOURCES "")
set(_pg_i 0)
foreach(_pg_name ${PATCHGRAD_EXERCISE_NAMES})
  list(GET PATCHGRAD_EXERCISE_FILES ${_pg_i} _pg_file)
  math(EXPR _pg_i "${_pg_i} + 1")
  if(_pg_name IN_LIST _pg_selected)
    list(APPEND PATCHGRAD_STUDENT_EXERCISES ${_pg_name})
    list(APPEND PATCHGRAD_STUDENT_SOURCES ${_pg_file})
  endif()
endforeach()
list(REMOVE_DUPLICATES PATCHGRAD_STUDENT_SOURCES)

# _patchgrad_split(VAR NAME): splits the text in variable VAR at exercise NAME's region into
# _pg_before (up to and including the opening marker line), _pg_body and _pg_after (from the
# closing marker line on), and sets _pg_indent to the marker's indentation; _pg_found is FALSE
# when the text has no such region. Works on the whole text with string(FIND/SUBSTRING), so
# that the code's semicolons and brackets pass through untouched.
function(_patchgrad_split var name)
  set(text "${${var}}")
  set(_pg_found FALSE PARENT_SCOPE)
  string(REGEX MATCH "(^|\n)[ \t]*// \\[exercise:${name}\\][ \t]*\n" marker "${text}")
  if(marker STREQUAL "")
    return()
  endif()
  string(FIND "${marker}" "//" slashes)
  string(SUBSTRING "${marker}" 0 ${slashes} indent)
  string(REGEX REPLACE "^\n" "" indent "${indent}")
  string(FIND "${text}" "${marker}" pos)
  string(LENGTH "${marker}" len)
  math(EXPR len "${pos} + ${len}")
  string(SUBSTRING "${text}" 0 ${len} before)
  string(SUBSTRING "${text}" ${len} -1 after)
  string(FIND "${after}" "// [/exercise:${name}]" close)
  string(SUBSTRING "${after}" 0 ${close} body)
  string(FIND "${body}" "\n" nl REVERSE)
  math(EXPR nl "${nl} + 1")
  string(SUBSTRING "${after}" 0 ${nl} body)
  string(SUBSTRING "${after}" ${nl} -1 after)
  set(_pg_found TRUE PARENT_SCOPE)
  set(_pg_indent "${indent}" PARENT_SCOPE)
  set(_pg_before "${before}" PARENT_SCOPE)
  set(_pg_body "${body}" PARENT_SCOPE)
  set(_pg_after "${after}" PARENT_SCOPE)
endfunction()

# _patchgrad_stub(NAME REL INDENT OUT): the stub standing for exercise NAME in student/REL.
function(_patchgrad_stub name rel indent out)
  # Point the student at the chapter that sets the exercise.
  set(where "tutorials/README.md")
  if(NOT PATCHGRAD_EXERCISE_CHAPTER_${name} STREQUAL "")
    set(where "tutorials/${PATCHGRAD_EXERCISE_CHAPTER_${name}}/README.md")
  endif()
  set(${out} "${indent}// TODO(exercise ${name}): write this part; the task is in ${where}, section Exercises.\n${indent}throw std::logic_error(\"exercise ${name}: not implemented yet (student/${rel})\");\n" PARENT_SCOPE)
endfunction()

# student/.handed-out records what this script did to the copies, one line per copy it created
# ("REL|-") and per region it turned into a stub ("REL|NAME"). It is how a region holding the
# reference code is told apart from a student's answer that happens to be identical to it:
# the first is a region never handed out, the second one that was.
set(_pg_manifest ${_pg_root}/student/.handed-out)

# _patchgrad_sync_student_copy(REL): makes student/REL follow the selection and never loses
# anything a student wrote. A new copy is the original with each selected region's body
# replaced by a stub. In an existing copy:
#   - a selected region is turned into a stub only if it was never handed out (not in the
#     record) and still holds the exact reference code, and only in a copy the record knows
#     (a hand-in copied in without its record is all the student's);
#   - a region no longer selected that still holds the exact, untouched stub gets the
#     reference code back (and leaves the record);
#   - anything else is the student's and stays as it is, byte for byte.
# Appends REL to _pg_created or _pg_updated, and changes _pg_handed_out (the record).
function(_patchgrad_sync_student_copy rel)
  set(copy_path ${_pg_root}/student/${rel})
  file(READ ${_pg_root}/${rel} original)
  set(record ${_pg_handed_out})
  if(EXISTS ${copy_path})
    file(READ ${copy_path} text)
    set(fresh FALSE)
  else()
    set(text "// Student copy of ${rel}, made by the PATCHGRAD_STUDENT build. A selected exercise's region\n")
    string(APPEND text "// throws until you write it; `cmake --build <build dir> --target grade` grades it. To start\n")
    string(APPEND text "// over, delete this file and re-run cmake (it copies ${rel} again).\n")
    string(APPEND text "#include <stdexcept>  // std::logic_error, thrown by the exercise stubs\n${original}")
    set(fresh TRUE)
    list(FILTER record EXCLUDE REGEX "^${rel}\\|")  # a deleted copy's regions start over
    list(APPEND record "${rel}|-")
  endif()
  set(known FALSE)
  if("${rel}|-" IN_LIST record)
    set(known TRUE)
  endif()
  set(changes "")
  set(i 0)
  foreach(name ${PATCHGRAD_EXERCISE_NAMES})
    list(GET PATCHGRAD_EXERCISE_FILES ${i} file)
    math(EXPR i "${i} + 1")
    if(NOT file STREQUAL rel)
      continue()
    endif()
    _patchgrad_split(original ${name})
    set(reference "${_pg_body}")
    _patchgrad_split(text ${name})
    if(NOT _pg_found)
      message(WARNING "student/${rel} has no region for exercise '${name}' (added to ${rel} after your copy was "
                      "made): it grades the reference code there. Delete student/${rel} and re-run cmake to get a "
                      "fresh copy (your changes in it are lost).")
      continue()
    endif()
    _patchgrad_stub(${name} ${rel} "${_pg_indent}" stub)
    set(selected FALSE)
    if(name IN_LIST PATCHGRAD_STUDENT_EXERCISES)
      set(selected TRUE)
    endif()
    if(selected AND NOT "${rel}|${name}" IN_LIST record AND _pg_body STREQUAL reference)
      if(known)
        set(text "${_pg_before}${stub}${_pg_after}")
        list(APPEND record "${rel}|${name}")
        list(APPEND changes "stubbed ${name}")
      else()
        message(STATUS "PATCHGRAD_STUDENT: student/${rel} was not made by this checkout (no record in "
                       "student/.handed-out), so its region '${name}' is taken as the student's and left as it is")
      endif()
    elseif(NOT selected AND _pg_body STREQUAL stub)
      set(text "${_pg_before}${reference}${_pg_after}")
      list(REMOVE_ITEM record "${rel}|${name}")
      list(APPEND changes "restored the reference code of ${name}")
    endif()
  endforeach()
  if(fresh OR changes)
    file(WRITE ${copy_path}.tmp "${text}")
    file(RENAME ${copy_path}.tmp ${copy_path})
  endif()
  if(fresh)
    set(_pg_created ${_pg_created} student/${rel} PARENT_SCOPE)
  elseif(changes)
    string(REPLACE ";" ", " changes "${changes}")
    set(_pg_updated ${_pg_updated} "student/${rel} (${changes})" PARENT_SCOPE)
  endif()
  set(_pg_handed_out ${record} PARENT_SCOPE)
endfunction()

if(PATCHGRAD_STUDENT)
  set(_pg_created "")
  set(_pg_updated "")
  set(_pg_handed_out "")
  if(EXISTS ${_pg_manifest})
    file(STRINGS ${_pg_manifest} _pg_handed_out)
  endif()
  set(_pg_record_before "${_pg_handed_out}")
  foreach(_pg_rel ${PATCHGRAD_EXERCISE_SOURCES})
    # A file with a selected exercise gets a copy; an existing copy holds the student's work on
    # earlier exercises, so it stays in use whatever the selection.
    if(_pg_rel IN_LIST PATCHGRAD_STUDENT_SOURCES OR EXISTS ${_pg_root}/student/${_pg_rel})
      _patchgrad_sync_student_copy(${_pg_rel})
      list(APPEND PATCHGRAD_STUDENT_SOURCES ${_pg_rel})
    endif()
  endforeach()
  if(NOT "${_pg_handed_out}" STREQUAL "${_pg_record_before}")
    string(REPLACE ";" "\n" _pg_text "${_pg_handed_out}")
    file(WRITE ${_pg_manifest}.tmp "${_pg_text}\n")
    file(RENAME ${_pg_manifest}.tmp ${_pg_manifest})
  endif()
  list(REMOVE_DUPLICATES PATCHGRAD_STUDENT_SOURCES)
  list(SORT PATCHGRAD_STUDENT_SOURCES)
  list(LENGTH PATCHGRAD_STUDENT_EXERCISES _pg_count)
  list(LENGTH PATCHGRAD_EXERCISE_NAMES _pg_all)
  string(REPLACE ";" ", " _pg_list "${PATCHGRAD_STUDENT_EXERCISES}")
  message(STATUS "PATCHGRAD_STUDENT: ${_pg_count} of ${_pg_all} exercises selected "
                 "(PATCHGRAD_EXERCISES=${PATCHGRAD_EXERCISES}): ${_pg_list}")
  foreach(_pg_what created updated)
    if(_pg_${_pg_what})
      string(REPLACE ";" "; " _pg_list "${_pg_${_pg_what}}")
      message(STATUS "PATCHGRAD_STUDENT: ${_pg_what} ${_pg_list}")
    endif()
  endforeach()
  string(REPLACE ";" ", " _pg_list "${PATCHGRAD_STUDENT_SOURCES}")
  message(STATUS "PATCHGRAD_STUDENT: compiling student/ copies of ${_pg_list}")
endif()

# patchgrad_use_student_copies(TARGET): in the student build, TARGET compiles student/<path>
# instead of each of its sources that has a copy (PATCHGRAD_STUDENT_SOURCES), with the original's folder on the
# include path so the copy's `#include "ops.h"` still resolves. The stubs leave variables
# unused, so those files build without -Werror and unused warnings.
function(patchgrad_use_student_copies target)
  if(NOT PATCHGRAD_STUDENT)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  set(replaced "")
  foreach(source ${sources})
    get_filename_component(absolute ${source} ABSOLUTE)
    file(RELATIVE_PATH rel ${_pg_root} ${absolute})
    if(rel IN_LIST PATCHGRAD_STUDENT_SOURCES)
      set(copy ${_pg_root}/student/${rel})
      list(APPEND replaced ${copy})
      get_filename_component(original_dir ${absolute} DIRECTORY)
      target_include_directories(${target} PRIVATE ${original_dir})
      set_source_files_properties(${copy} PROPERTIES COMPILE_OPTIONS "-Wno-error;${_pg_stub_warnings}")
    else()
      list(APPEND replaced ${source})
    endif()
  endforeach()
  set_property(TARGET ${target} PROPERTY SOURCES ${replaced})
endfunction()

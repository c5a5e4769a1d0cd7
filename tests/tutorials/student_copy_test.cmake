# student_copy_test.cmake — CTest "tutorials: the student build stubs only the selected
# exercises". Runs tutorials/tools/student_copy.cmake in `cmake -P` mode (where
# CMAKE_SOURCE_DIR is the working directory) on a fixture tree of two sources and two chapters,
# once per PATCHGRAD_EXERCISES value, and checks the student/ copies it writes.
#   cmake -DSCRIPT=tutorials/tools/student_copy.cmake -DWORK=<scratch dir> -P student_copy_test.cmake

set(fixture ${WORK}/student_copy_fixture)
# A script run by `cmake -P` gets the policies of the cmake_minimum_required it calls; the
# included file is written for the project's.
set(wrapper ${WORK}/student_copy_wrapper.cmake)
file(WRITE ${wrapper} "cmake_minimum_required(VERSION ${CMAKE_VERSION})\ninclude(${SCRIPT})\n")

function(fail message)
  message(FATAL_ERROR "student_copy_test: ${message}")
endfunction()

# expect_contains(TEXT NEEDLE MESSAGE): fails with MESSAGE and TEXT unless TEXT holds NEEDLE.
function(expect_contains text needle message)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    fail("${message}:\n${text}")
  endif()
endfunction()

# write_fixture(): a fresh tree; autograd/a.cpp holds ex-one and ex-two (chapter 01_first),
# layers/b.cpp holds ex-three (chapter 02_second).
function(write_fixture)
  file(REMOVE_RECURSE ${fixture})
  file(WRITE ${fixture}/autograd/a.cpp
       "int one(int x) {\n    // [exercise:ex-one]\n    x += 1;\n    // [/exercise:ex-one]\n    return x;\n}\n"
       "int two(int x) {\n    // [exercise:ex-two]\n    x *= 2;\n    // [/exercise:ex-two]\n    return x;\n}\n")
  file(WRITE ${fixture}/layers/b.cpp
       "int three(int x) {\n    // [exercise:ex-three]\n    x -= 3;\n    // [/exercise:ex-three]\n    return x;\n}\n")
  file(WRITE ${fixture}/tutorials/01_first/README.md "Graded by `[ex:ex-one]`; then `[ex:ex-two]`.\n")
  file(WRITE ${fixture}/tutorials/02_second/README.md "Graded by `[ex:ex-three]`.\n")
endfunction()

# configure(SELECTION): runs the script on the fixture; sets `result` and `output` (its messages, on one line).
macro(configure selection)
  execute_process(COMMAND ${CMAKE_COMMAND} -DPATCHGRAD_STUDENT=ON "-DPATCHGRAD_EXERCISES=${selection}" -P ${wrapper}
                  WORKING_DIRECTORY ${fixture} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  # CMake wraps messages at 80 columns: compare with the whitespace collapsed.
  string(REGEX REPLACE "[ \t\n]+" " " output "${output}")
endmacro()

# configure_ok(SELECTION WHAT): configure, failing with WHAT and the output unless it succeeds.
macro(configure_ok selection what)
  configure("${selection}")
  if(NOT result EQUAL 0)
    fail("${what} failed:\n${output}")
  endif()
endmacro()

macro(read_copy rel)
  set(copy "")
  if(EXISTS ${fixture}/student/${rel})
    file(READ ${fixture}/student/${rel} copy)
  endif()
endmacro()

macro(expect_stubbed rel name)
  read_copy(${rel})
  expect_contains("${copy}" "throw std::logic_error(\"exercise ${name}: not implemented yet (student/${rel})\");"
                  "PATCHGRAD_EXERCISES=${selection}: student/${rel} does not stub ${name}")
endmacro()

macro(expect_reference rel name body)
  read_copy(${rel})
  expect_contains("${copy}" "// [exercise:${name}]\n    ${body}\n    // [/exercise:${name}]"
                  "PATCHGRAD_EXERCISES=${selection}: student/${rel} lost the reference code of ${name}")
endmacro()

# One exercise: only its region is stubbed; its neighbour keeps the reference; no other copies.
write_fixture()
configure_ok(ex-two "PATCHGRAD_EXERCISES=ex-two")
expect_stubbed(autograd/a.cpp ex-two)
expect_reference(autograd/a.cpp ex-one "x += 1;")
if(EXISTS ${fixture}/student/layers/b.cpp)
  fail("ex-two alone made a copy of layers/b.cpp")
endif()
expect_contains("${copy}" "tutorials/01_first/README.md" "the stub does not point at the chapter that sets ex-two")

# A chapter, by folder and by number; a list with a comma.
foreach(selection 02_second 02)
  write_fixture()
  configure_ok(${selection} "PATCHGRAD_EXERCISES=${selection}")
  expect_stubbed(layers/b.cpp ex-three)
  if(EXISTS ${fixture}/student/autograd/a.cpp)
    fail("chapter 02 made a copy of autograd/a.cpp")
  endif()
endforeach()
write_fixture()
configure("ex-one,02")
expect_stubbed(autograd/a.cpp ex-one)
expect_reference(autograd/a.cpp ex-two "x *= 2;")
expect_stubbed(layers/b.cpp ex-three)

# all: every region.
write_fixture()
configure(all)
expect_stubbed(autograd/a.cpp ex-one)
expect_stubbed(autograd/a.cpp ex-two)
expect_stubbed(layers/b.cpp ex-three)

# Changing the selection updates a kept copy without losing the student's work: a selected
# region still holding the reference becomes a stub, an unselected one still holding the stub
# gets the reference back, and the student's own code stays (and stays compiled).
write_fixture()
configure(ex-one)
read_copy(autograd/a.cpp)
string(REPLACE "throw std::logic_error(\"exercise ex-one: not implemented yet (student/autograd/a.cpp)\");"
       "x = x + 1;  // the student's solution" copy "${copy}")
file(WRITE ${fixture}/student/autograd/a.cpp "${copy}")
set(selection 01_first)
configure_ok(${selection} "reconfiguring with a kept copy")
expect_stubbed(autograd/a.cpp ex-two)
expect_contains("${copy}" "x = x + 1;  // the student's solution" "selecting 01_first lost the student's ex-one")
expect_contains("${output}" "updated student/autograd/a.cpp (stubbed ex-two)" "no report of the stubbed region")
set(selection 02)
configure(${selection})
expect_reference(autograd/a.cpp ex-two "x *= 2;")
expect_stubbed(layers/b.cpp ex-three)
read_copy(autograd/a.cpp)
expect_contains("${copy}" "x = x + 1;  // the student's solution" "selecting 02 lost the student's ex-one")
expect_contains("${output}" "compiling student/ copies of autograd/a.cpp, layers/b.cpp" "the copy with the student's work is not compiled any more")

# A correct answer identical to the reference is the student's: reconfiguring, with the same
# selection or a wider one, never turns it back into a stub (student/.handed-out records that
# ex-one was handed out).
write_fixture()
configure(ex-one)
read_copy(autograd/a.cpp)
string(REPLACE "    // TODO(exercise ex-one)" "    x += 1;\n    // TODO(exercise ex-one)" copy "${copy}")
string(REGEX REPLACE "    // TODO\\(exercise ex-one\\)[^\n]*\n[^\n]*not implemented yet[^\n]*\n" "" copy "${copy}")
file(WRITE ${fixture}/student/autograd/a.cpp "${copy}")
expect_reference(autograd/a.cpp ex-one "x += 1;")
set(answered "${copy}")
foreach(selection ex-one 01_first all)
  configure_ok(${selection} "PATCHGRAD_EXERCISES=${selection} after an answer identical to the reference")
  expect_reference(autograd/a.cpp ex-one "x += 1;")
  string(FIND "${output}" "stubbed ex-one" at)
  if(NOT at EQUAL -1)
    fail("PATCHGRAD_EXERCISES=${selection} stubbed the student's answer to ex-one:\n${output}")
  endif()
endforeach()
expect_stubbed(autograd/a.cpp ex-two)

# A hand-in copied into a fresh checkout without its record is the student's, byte for byte.
write_fixture()
file(READ ${fixture}/autograd/a.cpp handed_in)
set(handed_in "// a student's copy\n#include <stdexcept>\n${handed_in}")
file(WRITE ${fixture}/student/autograd/a.cpp "${handed_in}")
set(selection 01_first)
configure_ok(${selection} "configuring with a hand-in")
read_copy(autograd/a.cpp)
if(NOT copy STREQUAL handed_in)
  fail("configuring changed a handed-in copy:\n${copy}")
endif()
expect_contains("${output}" "left as it is" "no note that the hand-in's regions are left alone")

# Nonsense and an empty selection: an error naming the value and listing what exists.
foreach(selection ex-four "")
  write_fixture()
  configure("${selection}")
  if(result EQUAL 0)
    fail("PATCHGRAD_EXERCISES='${selection}' was accepted")
  endif()
  if(selection STREQUAL "")
    expect_contains("${output}" "PATCHGRAD_EXERCISES is empty" "no error for an empty selection")
  else()
    expect_contains("${output}" "'ex-four' is neither an exercise nor a chapter with exercises"
                    "the error does not name 'ex-four'")
    expect_contains("${output}" "Exercises: ex-one, ex-two, ex-three. Chapters: 01_first, 02_second."
                    "the error does not list what exists")
  endif()
  if(EXISTS ${fixture}/student)
    fail("a rejected selection still wrote student/")
  endif()
endforeach()

file(REMOVE_RECURSE ${fixture} ${wrapper})

# Fails when the README's library example (the ```cpp block after the line
# "<!-- example: tests/readme/example.cpp -->") differs from tests/readme/example.cpp,
# which the suite compiles and runs: so the README's example is the program that was tested.
# Usage: cmake -DREADME=... -DEXAMPLE=... -P matches_readme.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "<!-- example: tests/readme/example.cpp -->" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no '<!-- example: tests/readme/example.cpp -->' line")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```cpp\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "README.md: no ```cpp block after the example marker")
endif()
math(EXPR start "${open} + 7")
string(SUBSTRING "${rest}" ${start} -1 rest)
string(FIND "${rest}" "```" close)
string(SUBSTRING "${rest}" 0 ${close} block)
if(NOT block STREQUAL example)
  message(FATAL_ERROR "README.md's library example differs from tests/readme/example.cpp: copy one onto the other")
endif()

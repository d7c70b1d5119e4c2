# cmake -DROOT=<devmodel dir> -DOUT=<header> -DEXTRA=<text> -P source_hash.cmake
# Writes OUT defining DEVMODEL_SOURCE_HASH: the SHA-256 of every file the
# library is built from (ROOT/CMakeLists.txt, the repository's top-level
# CMakeLists.txt, include/ and src/ without the *_test.cc files, each with its
# path) and EXTRA (compiler and flags). A state file (state_cache.h) carries
# it, so a library built from other sources never reads an old file. OUT is
# rewritten only when the hash changes.
file(GLOB_RECURSE files RELATIVE "${ROOT}" "${ROOT}/include/*" "${ROOT}/src/*")
list(FILTER files EXCLUDE REGEX "_test\\.cc$")
list(APPEND files CMakeLists.txt ../CMakeLists.txt)
list(SORT files)
set(text "")
foreach(f IN LISTS files)
  file(SHA256 "${ROOT}/${f}" h)
  string(APPEND text "${f} ${h}\n")
endforeach()
string(APPEND text "${EXTRA}\n")
string(SHA256 hash "${text}")
set(content "#define DEVMODEL_SOURCE_HASH \"${hash}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()

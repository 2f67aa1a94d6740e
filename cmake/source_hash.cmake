# Writes OUTPUT, a header defining PTB_SOURCE_HASH: the SHA-256 of every C++ source file (names
# and contents). The compile cache keys on it (pytvmbridge/cache.py), so that entries made by one
# build of the compiler are never read by another whose code differs. Run by a build step that
# depends on every source; the header is rewritten only when the hash changes, so that an edit
# recompiles the one file including it and nothing else.
file(GLOB_RECURSE files LIST_DIRECTORIES false "${SOURCE_DIR}/*.cc" "${SOURCE_DIR}/*.h")
list(SORT files)
set(all "")
foreach(f IN LISTS files)
  file(SHA256 "${f}" h)
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
  string(APPEND all "${rel} ${h}\n")
endforeach()
string(SHA256 hash "${all}")
set(text "#pragma once\n#define PTB_SOURCE_HASH \"${hash}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")

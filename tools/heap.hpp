#pragma once

/// The heap of Cobble's programs (cobbled, cobble, cobble-bench): mimalloc, linked in place of
/// glibc's malloc, with its memory in 2 MiB pages (see docs/performance.md, "Replay and
/// recovery").
///
/// Recovery and replay build millions of small records; with glibc's malloc in 4 KiB pages
/// half of their time went to malloc and to the page faults of first touching new heap (this
/// VM has transparent huge pages on `madvise` only). mimalloc asks the kernel for huge pages
/// (madvise) once `use_huge_pages()` was called; the environment variable
/// MIMALLOC_LARGE_OS_PAGES=0 turns that off again (and every other MIMALLOC_* option applies).

#include <string>

namespace cobble::heap {

/// Call first thing in main(): lets the allocator take 2 MiB pages for the memory it maps
/// from now on, unless MIMALLOC_LARGE_OS_PAGES is set (then that decides).
void use_huge_pages();

/// "mimalloc 2.0.9, large OS pages on|off", and whether `malloc` really is mimalloc's (it is
/// when the program was linked as CMake links these three).
std::string describe();

/// True when memory from plain `malloc` (and `new`) comes from mimalloc.
bool malloc_is_mimalloc();

} // namespace cobble::heap

#include "tools/heap.hpp"

#include <mimalloc.h>

#include <cstdlib>
#include <cstring>

namespace cobble::heap {

namespace {

/// True when the environment sets MIMALLOC_LARGE_OS_PAGES (then it decides).
bool large_pages_in(char** envp) {
  static constexpr char name[] = "MIMALLOC_LARGE_OS_PAGES=";
  for (char** e = envp; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, name, sizeof(name) - 1) == 0)
      return true;
  return false;
}

/// Turns mimalloc's large OS pages on before mimalloc initializes: mimalloc reads the option
/// once, when the process starts (its own initializer, or the first malloc), and an option
/// set later in main() no longer takes effect. The functions of an executable's
/// .preinit_array run before the initializers of every shared library (ELF), and this one
/// neither allocates nor touches anything but mimalloc's option table.
void enable_before_init(int, char**, char** envp) {
  if (!large_pages_in(envp))
    mi_option_set_enabled(mi_option_large_os_pages, true);
}

[[gnu::section(".preinit_array"), gnu::used]] void (*const preinit_entry)(int, char**, char**)
  = enable_before_init;

} // namespace

void use_huge_pages() {
  // The work is done by enable_before_init; calling this links it in. For memory mapped from
  // now on, set it again in case the hook did not run (a program without .preinit_array).
  if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr)
    mi_option_set_enabled(mi_option_large_os_pages, true);
}

bool malloc_is_mimalloc() {
  // Through a pointer, so the compiler cannot elide the pair.
  void* (*volatile alloc)(std::size_t) = std::malloc;
  void* p = alloc(64);
  bool ours = mi_is_in_heap_region(p);
  std::free(p);
  return ours;
}

std::string describe() {
  auto v = mi_version(); // e.g. 209
  std::string out = "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "."
                    + std::to_string(v % 10);
  out += mi_option_is_enabled(mi_option_large_os_pages) ? ", large OS pages on"
                                                        : ", large OS pages off";
  if (!malloc_is_mimalloc())
    out += " (not in use: malloc is another allocator's)";
  return out;
}

} // namespace cobble::heap

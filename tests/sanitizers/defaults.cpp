// The sanitizers' default options, linked into every program of a sanitizer build (see
// COBBLE_SANITIZE in CMakeLists.txt), so that a test, a cobbled it starts and a program run
// by hand all stop at the first finding and read the same suppression files. The
// environment (ASAN_OPTIONS, UBSAN_OPTIONS, TSAN_OPTIONS, LSAN_OPTIONS) still overrides.

#ifndef COBBLE_SANITIZER_DIR
#error "COBBLE_SANITIZER_DIR must name the folder of the suppression files"
#endif

#define COBBLE_VISIBLE extern "C" __attribute__((visibility("default"), used))

COBBLE_VISIBLE const char* __asan_default_options() {
  return "detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1";
}

// UBSan reports are recoverable in our builds (a suppression must be able to skip one), and
// halt_on_error makes every report that is not suppressed fatal all the same.
COBBLE_VISIBLE const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:suppressions=" COBBLE_SANITIZER_DIR "/ubsan.supp";
}

COBBLE_VISIBLE const char* __lsan_default_options() {
  return "suppressions=" COBBLE_SANITIZER_DIR "/lsan.supp";
}

COBBLE_VISIBLE const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" COBBLE_SANITIZER_DIR "/tsan.supp";
}

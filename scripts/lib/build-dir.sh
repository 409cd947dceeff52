# Sourced by the scripts: sets build_dir from COBBLE_BUILD_DIR or COBBLE_SANITIZE (empty or
# none: the plain build).
case "${COBBLE_SANITIZE:-}" in
  "" | none) default_build_dir=build ;;
  address) default_build_dir=build-asan ;;
  thread) default_build_dir=build-tsan ;;
  *) echo "COBBLE_SANITIZE must be none, address or thread, not '$COBBLE_SANITIZE'" >&2; exit 2 ;;
esac
build_dir="${COBBLE_BUILD_DIR:-$default_build_dir}"

# Sourced by the scripts: sets sanitize (address, thread or empty for the plain build) from
# COBBLE_SANITIZE (empty or none: the plain build), and build_dir from COBBLE_BUILD_DIR or it.
sanitize="${COBBLE_SANITIZE:-}"
[ "$sanitize" = none ] && sanitize=""
case "$sanitize" in
  "") default_build_dir=build ;;
  address) default_build_dir=build-asan ;;
  thread) default_build_dir=build-tsan ;;
  *) echo "COBBLE_SANITIZE must be none, address or thread, not '$COBBLE_SANITIZE'" >&2; exit 2 ;;
esac
build_dir="${COBBLE_BUILD_DIR:-$default_build_dir}"

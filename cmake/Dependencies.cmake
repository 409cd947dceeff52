# Every dependency comes from a Debian 12 package; scripts/deps.sh installs them.

find_package(Threads REQUIRED)

# CAF 0.17.6 ships no CMake package config: import it by hand. The ThreadSanitizer build
# points CAF_INCLUDE_DIR and CAF_CORE_LIBRARY at an instrumented build of the same version
# (scripts/lib/caf-tsan.sh).
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
if(NOT TARGET caf::core)
  add_library(caf::core UNKNOWN IMPORTED)
  set_target_properties(caf::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

find_package(RocksDB REQUIRED CONFIG)
find_package(Boost 1.81 REQUIRED CONFIG)          # header-only: Beast, Asio
find_package(yaml-cpp REQUIRED CONFIG)
find_package(pugixml REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
find_package(fmt REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
find_package(nlohmann_json 3.11 REQUIRED CONFIG)
find_package(OpenSSL REQUIRED)                          # md5, random tokens
find_package(ZLIB REQUIRED)                             # the statistics export's .gz files
# ISA-L (libisal-dev): the CRC-32 of events and snapshots, folded with carry-less multiplies.
# It ships a pkg-config file and no CMake config.
find_path(ISAL_INCLUDE_DIR isa-l/crc.h REQUIRED)
find_library(ISAL_LIBRARY isal REQUIRED)
if(NOT TARGET isal::isal)
  add_library(isal::isal UNKNOWN IMPORTED)
  set_target_properties(isal::isal PROPERTIES
    IMPORTED_LOCATION "${ISAL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ISAL_INCLUDE_DIR}")
endif()
# libsodium (libsodium-dev): Argon2id for volunteers' passwords (net/password.hpp). No CMake
# config either.
find_path(SODIUM_INCLUDE_DIR sodium.h REQUIRED)
find_library(SODIUM_LIBRARY sodium REQUIRED)
if(NOT TARGET sodium::sodium)
  add_library(sodium::sodium UNKNOWN IMPORTED)
  set_target_properties(sodium::sodium PROPERTIES
    IMPORTED_LOCATION "${SODIUM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SODIUM_INCLUDE_DIR}")
endif()
# kainjow's Mustache (libkainjow-mustache-dev): the volunteer site's templates. Header only.
find_path(MUSTACHE_INCLUDE_DIR kainjow/mustache.hpp REQUIRED) # in /usr/include: no flag needed
find_package(mimalloc 2.0 REQUIRED CONFIG)              # the programs' heap (tools/heap.hpp)
find_package(Catch2 2 REQUIRED CONFIG)

# Precompiled headers. Nearly every file includes much of the standard library and abseil, most
# include RapidJSON, and every test file GoogleTest: parsing those took 1.5 to 2.5 of a file's 5
# to 10 seconds (GCC 12, -O2 -g1), in each of CI's four builds. One header is precompiled per
# flavour and reused by every target of that flavour:
#   PURE   the standard library and abseil: topology, plan (the pure rooms get no JSON library)
#   JSON   PURE and RapidJSON: the other rooms' libraries
#   TESTS  JSON, GoogleTest and gmock: the test binaries
# Only third-party headers go in, so a room still cannot include a header of a room it may not
# see (cmake/rooms.cmake). A flavour's first target builds it; the targets after it reuse it.
# That first target must define no macro the others lack (httplib's options, which targets
# linking test_support get, would not do), and build with the same optimisation level: GCC
# refuses such a header, and -Winvalid-pch makes that an error, not a silent slowdown.
# -DGPU_TENANCY_PCH=OFF builds without them, which also shows a file's missing #include.
#
#   gpu_tenancy_pch(TARGET PURE|JSON|TESTS)
option(GPU_TENANCY_PCH "Precompile the standard, abseil, RapidJSON and GoogleTest headers" ON)

set(GPU_TENANCY_PCH_PURE
  <algorithm> <chrono> <cstdint> <functional> <map> <memory> <mutex> <optional> <string>
  <string_view> <utility> <vector>
  <absl/container/flat_hash_map.h> <absl/status/status.h> <absl/status/statusor.h>
  <absl/strings/str_cat.h> <absl/strings/string_view.h>)
set(GPU_TENANCY_PCH_JSON ${GPU_TENANCY_PCH_PURE}
  <rapidjson/document.h> <rapidjson/stringbuffer.h> <rapidjson/writer.h>)
set(GPU_TENANCY_PCH_TESTS ${GPU_TENANCY_PCH_JSON} <gmock/gmock.h> <gtest/gtest.h>)

function(gpu_tenancy_pch target flavour)
  if(NOT GPU_TENANCY_PCH)
    return()
  endif()
  if(NOT DEFINED GPU_TENANCY_PCH_${flavour})
    message(FATAL_ERROR "gpu_tenancy_pch: unknown flavour ${flavour} (PURE, JSON or TESTS)")
  endif()
  get_property(owner GLOBAL PROPERTY GPU_TENANCY_PCH_OWNER_${flavour})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${GPU_TENANCY_PCH_${flavour}})
    set_property(GLOBAL PROPERTY GPU_TENANCY_PCH_OWNER_${flavour} ${target})
  endif()
endfunction()

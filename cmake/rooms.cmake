# Rooms (docs/architecture.md): a library's include path holds only its own folder and the rooms it
# may depend on, as a folder of links made at configure time (build/rooms/<room>/). Including a
# header of any other room is then "No such file" when compiling, not a finding in review.
# test/, bench/ and fuzz/ see the whole tree. test/CMakeLists.txt checks that each room is
# refused what it must not see.
#
# It also puts the target in unity batches when GPU_TENANCY_UNITY_ROOMS is on (CMakeLists.txt).
#
# base/ (the status macros) lies below every room, so every view holds it.
#
#   gpu_tenancy_room(TARGET ROOM [LOWER_ROOM...])
function(gpu_tenancy_room target room)
  set(view "${PROJECT_BINARY_DIR}/rooms/${room}")
  file(MAKE_DIRECTORY "${view}")
  foreach(seen base ${room} ${ARGN})
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${seen}" "${view}/${seen}" SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE "${view}")
  set_target_properties(${target} PROPERTIES UNITY_BUILD ${GPU_TENANCY_UNITY_ROOMS})
endfunction()

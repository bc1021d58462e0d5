# embed_text_file(OUT_CC SYMBOL FILE): generates a .cc that defines
#   absl::string_view SYMBOL() returning the file's bytes, so data files (the MIG catalog, the demo
#   cluster and policy) ship inside the binary and stay readable, reviewable files in the repo.
function(embed_text_file out_cc symbol file)
  set(in "${CMAKE_CURRENT_SOURCE_DIR}/${file}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cc")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DSYMBOL=${symbol}
            -P "${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake"
    DEPENDS "${in}" "${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake"
    VERBATIM)
  set(${out_cc} "${out}" PARENT_SCOPE)
endfunction()

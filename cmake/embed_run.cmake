# Script mode half of embed_text_file(): writes the raw string literal.
file(READ "${IN}" content)
string(FIND "${content}" ")embedded\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )embedded\"")
endif()
file(WRITE "${OUT}" "// Generated from ${IN}; do not edit.\n#include \"absl/strings/string_view.h\"\n\nabsl::string_view ${SYMBOL}() {\n  static constexpr absl::string_view kText = R\"embedded(${content})embedded\";\n  return kText;\n}\n")

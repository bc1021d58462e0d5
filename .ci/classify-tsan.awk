# Sorts ThreadSanitizer logs into reports that involve this repository's code and reports that
# happen entirely inside uninstrumented shared libraries (.ci/sanitizers, tsan stage).
#
#   awk -v ROOT="$PWD" -v OURS=ours.txt -v LIB=libraries.txt -f .ci/classify-tsan.awk LOG...
#
# Writes each report to OURS or LIB and prints "<ours> <libraries>".
#
# A data race is ours unless both racing accesses, and the allocation of the memory they touch
# (or the global it is), were made by code in an uninstrumented shared library: the first frame
# of each that is neither TSan's own nor header code from /usr/include must be in a lib*.so. Any
# other report kind is ours when any frame is a source file of this repository. A stack or TLS
# location, or a section with no deciding frame, counts as ours.
#
# An access whose stack TSan could no longer restore ("[failed to restore the stack]": its
# history buffer moved on) is a library's only when the same thread allocated the block from
# library code and every other section is a library's. That is the shape of a function-local
# static in an uninstrumented library: the thread that first runs the function allocates and
# fills it, another reads it, and TSan cannot see the initialisation guard between them. Any
# other unrestorable access counts as ours.

function frame_owner(line) {
  if (index(line, " " ROOT "/") > 0) return "ours"
  if (line ~ /\(libtsan\.so/ || line ~ / \/usr\/include\// || line ~ /src\/libsanitizer\//) return "skip"
  # libstdc++ template code without line info inside one of our binaries is a copy that an
  # uninstrumented static library (Debian's gtest, abseil) brought along: header code too.
  if (line ~ /^    #[0-9]+ std::/ && line ~ / <null> \(/) return "skip"
  if (line ~ /\((\/[^ ]*\/)?lib[^ \/]*\.so[^ ]*\+0x[0-9a-f]+\)$/) return "lib"
  return "ours"  # our binaries without line info, statically linked gtest: count as ours
}

function thread_of(header) {
  if (match(header, /by thread T[0-9]+/)) return substr(header, RSTART + 10, RLENGTH - 10)
  if (header ~ /by main thread/) return "main"
  return "?"
}

function close_section() {
  if (section == "access" && unrestorable && owner == "") {
    unrestored[++n_unrestored] = section_thread
  } else if (section == "heap") {
    heap_owner = owner == "" ? "ours" : owner
    heap_thread = section_thread
  }
  if (section != "" && owner == "ours") mine = 1
  if (section != "" && owner == "" && !(section == "access" && unrestorable)) mine = 1
  section = ""; owner = ""; unrestorable = 0; section_thread = ""
}

function flush(    i) {
  close_section()
  if (report != "") {
    if (kind !~ /data race/) {
      mine = any_ours
    } else {
      for (i = 1; i <= n_unrestored; i++) {
        if (heap_owner != "lib" || unrestored[i] != heap_thread) mine = 1
      }
    }
    if (mine) { n_ours++; printf "%s", report > OURS } else { n_lib++; printf "%s", report > LIB }
  }
  report = ""; mine = 0; any_ours = 0; kind = ""
  n_unrestored = 0; heap_owner = ""; heap_thread = ""
}

/^==================$/ { flush(); next }

{
  report = report $0 "\n"
  if ($0 ~ /^WARNING: ThreadSanitizer: /) { kind = $0; next }
  if ($0 ~ /^    #[0-9]+ / && index($0, " " ROOT "/") > 0) any_ours = 1
  if ($0 ~ /^  [A-Z]/) {
    close_section()
    if ($0 ~ /^  (Read|Write|Previous|Atomic)/) {
      section = "access"; section_thread = thread_of($0)
    } else if ($0 ~ /^  Location is heap block/) {
      section = "heap"; section_thread = thread_of($0)
    } else if ($0 ~ /^  Location is global/) {
      if ($0 !~ /\((\/[^ ]*\/)?lib[^ \/]*\.so[^ ]*\+0x[0-9a-f]+\)$/) mine = 1
    } else if ($0 ~ /^  Location is/) {
      mine = 1  # stack, TLS, fd...: conservative
    }
    next
  }
  if (section != "" && $0 ~ /^    \[failed to restore the stack\]/) { unrestorable = 1; next }
  if (section != "" && owner == "" && $0 ~ /^    #[0-9]+ /) {
    o = frame_owner($0)
    if (o != "skip") owner = o
  }
}

END { flush(); printf "%d %d", n_ours + 0, n_lib + 0 }

# Rewrites one expression inside one function of a Kueue source file, in the engine's copy of
# the release's module (toolchain/build.sh whatif_kueue; never in the module cache). Variables:
# fn, the function's header line up to its name (a literal prefix); from and to, literal text;
# release and file, for the messages. The expression must occur exactly once inside the
# function, or the build fails: a release that moved the code is a build error naming the
# release, the file and the function, not a silently different engine. rewrites.tsv lists the
# rewrites and why each one is there.
index($0, fn) == 1 { inside = 1; found++ }
inside && (at = index($0, from)) > 0 {
  if (++seen == 1) $0 = substr($0, 1, at - 1) to substr($0, at + length(from))
}
inside && /^}/ { inside = 0 }
{ print }
END {
  where = sprintf("Kueue %s, %s, %s...)", release, file, fn)
  if (found == 0) {
    printf "rewrite.awk: %s: no such function (renamed, or moved to another file)\n", where > "/dev/stderr"
    exit 1
  }
  if (seen != 1) {
    printf "rewrite.awk: %s: \"%s\" found %d times, not once\n", where, from, seen + 0 > "/dev/stderr"
    exit 1
  }
}

# Rewrites one expression inside one function of a Kueue source file, in the throwaway copy
# of the release's module that toolchain/build.sh builds the engine from (never in the module
# cache). Variables: fn, the function's header line up to its name (a literal prefix); from
# and to, literal text. Exactly one occurrence inside the function is rewritten, or the build
# fails: a release that moved the code is a build error, not a silently different engine.
# rewrites.tsv lists the rewrites and why each one is there.
index($0, fn) == 1 { inside = 1 }
inside && !done && (at = index($0, from)) > 0 {
  $0 = substr($0, 1, at - 1) to substr($0, at + length(from))
  done = 1
}
inside && /^}/ { inside = 0 }
{ print }
END {
  if (!done) {
    printf "rewrite.awk: %s has no %s in %s\n", FILENAME, from, fn > "/dev/stderr"
    exit 1
  }
}

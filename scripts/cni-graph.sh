#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cni/'s cross-file call graph, read from the built objects (nm: what each
# object defines, what it leaves undefined), and a failure on any circle.
# Prints the files low to high: each after every file it calls, with its
# level (1 + the highest level it calls) and what it calls in cni/.
#   scripts/cni-graph.sh [BUILD-DIR]    # default: build
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$src/build}
lib=$dir/cni/librailgate-cni.a
main=$dir/cni/CMakeFiles/railgate-cni-bin.dir/main.c.o
for f in "$lib" "$main"; do
  [[ -f $f ]] || { echo "cni-graph: $f: not built" >&2; exit 1; }
done

# "file kind symbol" for every external symbol: D (defined) or U (undefined)
syms=$({
  nm -g -P -A "$lib" | sed -E 's/^[^[]*\[([^]]*)\.c\.o\]: ([^ ]+) ([A-Za-z]).*/\1 \3 \2/'
  nm -g -P "$main" | sed -E 's/^([^ ]+) ([A-Za-z]).*/main \2 \1/'
} | awk '{ print $1, ($2 == "U" ? "U" : "D"), $3 }')

# "caller callee" once per pair: an undefined symbol another cni/ object defines
edges=$(awk '$2 == "D" { def[$3] = $1 } $2 == "U" { use[NR] = $1 " " $3 }
  END { for (i in use) { split(use[i], a, " "); if (a[2] in def && def[a[2]] != a[1])
          print a[1], def[a[2]] } }' <<<"$syms" | sort -u)
files=$(awk '{ print $1 }' <<<"$syms" | sort -u)

# tsort: callee before caller; a circle is a loop it reports
err=$(mktemp)
trap 'rm -f "$err"' EXIT
order=$({ awk '{ print $2, $1 }' <<<"$edges"; for f in $files; do echo "$f $f"; done; } |
  tsort 2>"$err") || true
if [[ -s $err ]]; then
  echo "cni-graph: cni/ has a circle (tsort names one at a time):" >&2
  sed 's/^tsort: //' "$err" >&2
  exit 1
fi

ORDER=$order awk '
  { out[$1] = out[$1] " " $2 }
  END {
    n = split(ENVIRON["ORDER"], o, "\n")
    for (i = 1; i <= n; i++) {
      f = o[i]; lv = 0; k = split(out[f], c, " ")
      for (j = 1; j <= k; j++) if (level[c[j]] > lv) lv = level[c[j]]
      level[f] = lv + 1
      printf "%d %-12s -> %s\n", level[f], f, k ? substr(out[f], 2) : "(nothing in cni/)"
    }
  }' <<<"$edges" | sort -s -n -k1,1 | awk '{ $1 = "L" $1; print }' |
  sed -E 's/^(L[0-9]+) ([^ ]+) ->/\1  \2 ->/'
echo "cni-graph: $(wc -w <<<"$files") files, $(wc -l <<<"$edges") edges, no circle"

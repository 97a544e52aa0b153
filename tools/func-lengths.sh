#!/usr/bin/env bash
# func-lengths.sh: the C (and CUDA C, and the CUDA emulator's C++) functions
# longer than N lines, and optionally the source files longer than F lines,
# longest first. The STYLE.md limits are 120 lines a function and 800 lines
# a file.
#
#   tools/func-lengths.sh                  # functions over 120 lines in the tree
#   tools/func-lengths.sh -n 80 sim core   # over 80 lines, in sim/ and core/
#   tools/func-lengths.sh -f 800           # also the files over 800 lines
#   tools/func-lengths.sh -c               # exit 1 when anything is listed
#
# Output: one line per function, "LINES  FILE:LINE  NAME", then with -f one
# line per file, "LINES  FILE". A function's length runs from the line of its
# name to its closing brace, both included (the count the issues quote).
#
# What it is: a brace-matching awk over definitions whose name starts a line
# (`static int foo(...)` / `int foo(...)`, the house style), with string and
# character literals and comments blanked before braces are counted. What it
# is not: a C parser. A definition whose name line is indented, or a macro
# that expands to a function, is not seen; a brace inside a preprocessor
# conditional that opens in one branch and closes in another can miscount.
set -euo pipefail
max=120
files_max=""
check=0
while getopts "n:f:ch" opt; do
    case $opt in
    n) max=$OPTARG ;;
    f) files_max=$OPTARG ;;
    c) check=1 ;;
    h) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: func-lengths.sh [-n LINES] [-f LINES] [-c] [PATH...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
    cd "$root"
    set -- core sim exec kernels reports tools tests
fi
mapfile -t srcs < <(find "$@" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \) | sort)
[ ${#srcs[@]} -gt 0 ] || { echo "func-lengths.sh: no C sources under $*" >&2; exit 2; }

funcs=$(awk -v max="$max" '
    FNR == 1 { depth = 0; incomment = 0; cand = ""; fname = "" }
    {
        # blank comments and literals, keep the braces of the code
        s = $0; out = ""
        while (length(s) > 0) {
            if (incomment) {
                i = index(s, "*/")
                if (i == 0) { s = ""; break }
                s = substr(s, i + 2); incomment = 0; continue
            }
            c = substr(s, 1, 1); c2 = substr(s, 1, 2)
            if (c2 == "//") break
            if (c2 == "/*") { incomment = 1; s = substr(s, 3); continue }
            if (c == "\"" || c == "\047") {
                q = c; j = 2
                while (j <= length(s)) {
                    d = substr(s, j, 1)
                    if (d == "\\") { j += 2; continue }
                    if (d == q) break
                    j++
                }
                s = substr(s, j + 1); out = out q q; continue
            }
            out = out c; s = substr(s, 2)
        }
        line = out
        if (line ~ /^[ \t]*#/) next
        if (depth == 0) {
            # a definition starts at a line that begins with a letter and
            # holds "(" before any "=" (not an initialiser) and no ";"
            if (line ~ /^[A-Za-z_].*\(/) {
                p = index(line, "("); e = index(line, "=")
                if (e == 0 || e > p) {
                    head = substr(line, 1, p - 1)
                    sub(/[ \t]+$/, "", head)
                    n = split(head, w, /[ \t*]+/)
                    cand = w[n]; cstart = FNR
                }
            }
            if (cand != "" && index(line, ";") && !index(line, "{")) cand = ""
        }
        nopen = gsub(/\{/, "{", line); nclose = gsub(/\}/, "}", line)
        if (depth == 0 && nopen > 0 && cand != "") { fname = cand; fstart = cstart }
        depth += nopen - nclose
        if (depth <= 0) {
            depth = 0
            if (fname != "" && nopen + nclose > 0) {
                len = FNR - fstart + 1
                if (len > max) printf "%6d  %s:%d  %s\n", len, FILENAME, fstart, fname
                fname = ""; cand = ""
            }
        }
    }' "${srcs[@]}" | sort -rn)
[ -z "$funcs" ] || echo "$funcs"

bigfiles=""
if [ -n "$files_max" ]; then
    bigfiles=$(wc -l "${srcs[@]}" | awk -v m="$files_max" '$2 != "total" && $1 > m { printf "%6d  %s\n", $1, $2 }' | sort -rn)
    [ -z "$bigfiles" ] || echo "$bigfiles"
fi
if [ "$check" = 1 ] && [ -n "$funcs$bigfiles" ]; then exit 1; fi
exit 0

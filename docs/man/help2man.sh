#!/bin/sh
# One program's man page (docs/meson.build): help2man from the program's --help and
# --version, with the NAME and SEE ALSO of INCLUDE, and the examples kept one per line
# (help2man fills every paragraph, which runs a help text's example lines together).
# Usage: help2man.sh HELP2MAN INCLUDE OUTPUT PROGRAM [SUBCOMMAND]
set -eu
help2man=$1
include=$2
output=$3
shift 3
# The programs that write records name their schema on a second --version line
# (docs/records.md): help2man would append it to the last section (the examples), so it
# gets a RECORDS section of its own (a line "*Records*" starts one).
version=$($* --version)
if [ "$(printf '%s\n' "$version" | wc -l)" -gt 1 ]; then
    version=$(printf '%s\n' "$version" | sed '1a\
*Records*')
fi
# help2man runs "PROGRAM --help" through the shell: a subcommand rides along in the name.
"$help2man" --no-info --section=1 --include="$include" --output="$output.tmp" \
    --version-string="$version" "$*"
awk '
/^\.S[HS] / {
    if (examples) print ".fi"
    examples = tolower($0) ~ /example/
    print
    if (examples) print ".nf"
    next
}
{ print }
END { if (examples) print ".fi" }' "$output.tmp" >"$output"
rm -f "$output.tmp"
